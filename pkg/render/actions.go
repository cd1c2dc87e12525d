package render

import (
	"context"
	"fmt"
	"reflect"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/postrender"
)

// Helm's install and upgrade actions set up from Options, one mapping for
// Helm 3's and Helm 4's (the apply sets them up here too), and run as the
// render's last step: a dry run against the server.

// NewInstall returns Helm's install action set up with these flags, as
// `helm upgrade --install` sets it up (cmd/helm/upgrade.go: --history-max,
// --cleanup-on-fail and --recreate-pods do not reach an install). Planning
// and applying share it; each then sets what differs (dry run,
// post-renderer, description, force). HideSecret is never set: see Options.
func (o *Options) NewInstall(cfg *action.Configuration, name, namespace string) *action.Install {
	inst := action.NewInstall(cfg)
	inst.ReleaseName = name
	inst.Namespace = namespace
	o.SetInstall(inst)
	o.setHelm3(&inst.Wait, &inst.Atomic, &inst.Description, &inst.DependencyUpdate)
	return inst
}

// NewUpgrade returns Helm's upgrade action set up with these flags; see
// NewInstall.
func (o *Options) NewUpgrade(cfg *action.Configuration, namespace string) *action.Upgrade {
	up := action.NewUpgrade(cfg)
	up.Install = o.Install
	up.Namespace = namespace
	o.SetUpgrade(up)
	o.setHelm3(&up.Wait, &up.Atomic, &up.Description, &up.DependencyUpdate)
	up.Recreate = o.RecreatePods
	return up
}

// setHelm3 sets the fields only Helm 3's actions have (Helm 4 turned Wait
// and Atomic into WaitStrategy and RollbackOnFailure).
func (o *Options) setHelm3(wait, atomic *bool, description *string, dependencyUpdate *bool) {
	*wait, *atomic, *description, *dependencyUpdate = o.Wait, o.Atomic, o.Description, o.DependencyUpdate
}

// actionFields is the one mapping of these options onto Helm's install and
// upgrade actions, Helm 3's and Helm 4's alike: each action field name and
// its value. Helm 3 and Helm 4 actions are distinct types whose shared
// fields have the same names, so the mapping sets them by name.
func (o *Options) actionFields(upgrade bool) map[string]interface{} {
	f := map[string]interface{}{
		"Devel": o.Devel, "DisableHooks": o.DisableHooks, "SkipCRDs": o.SkipCRDs,
		"SkipSchemaValidation": o.SkipSchemaValidation, "DisableOpenAPIValidation": o.DisableOpenAPIValidation,
		"Timeout": o.TimeLimit(), "WaitForJobs": o.WaitForJobs, "SubNotes": o.SubNotes, "HideNotes": o.HideNotes,
		"Labels": o.Labels, "EnableDNS": o.EnableDNS, "TakeOwnership": o.TakeOwnership,
	}
	if !upgrade {
		f["CreateNamespace"] = o.CreateNamespace
		return f
	}
	for k, v := range map[string]interface{}{
		"ResetValues": o.ResetValues, "ReuseValues": o.ReuseValues, "ResetThenReuseValues": o.ResetThenReuseValues,
		"MaxHistory": o.MaxHistory, "CleanupOnFail": o.CleanupOnFail,
	} {
		f[k] = v
	}
	return f
}

// SetInstall sets these options on inst, a Helm 3 or Helm 4 *action.Install.
func (o *Options) SetInstall(inst interface{}) { setFields(inst, o.actionFields(false)) }

// SetUpgrade sets these options on up, a Helm 3 or Helm 4 *action.Upgrade.
func (o *Options) SetUpgrade(up interface{}) { setFields(up, o.actionFields(true)) }

// setFields sets each named field of the struct act points to. A field the
// action lacks or of another type is a programming error (a Helm version
// that renamed it), which the unit tests of both Helm versions hit.
func setFields(act interface{}, fields map[string]interface{}) {
	v := reflect.ValueOf(act).Elem()
	for name, value := range fields {
		f := v.FieldByName(name)
		if !f.IsValid() || !f.CanSet() {
			panic(fmt.Sprintf("render: %s has no settable field %s", v.Type(), name))
		}
		f.Set(reflect.ValueOf(value).Convert(f.Type()))
	}
}

// renderInstall renders res's chart as Helm's install of release name in
// ns with --dry-run=server: the release does not exist, or every revision
// was uninstalled and kept (res.Last), which the install replaces.
func renderInstall(ctx context.Context, run *action.Configuration, res *Result, name, ns string, cpo action.ChartPathOptions, post postrender.PostRenderer, vals map[string]interface{}, opts Options) (*Result, error) {
	switch t := res.Chart.Metadata.Type; t {
	case "", "application":
	default:
		return nil, fmt.Errorf("chart %s: %s charts are not installable", res.ChartPath, t)
	}
	if !opts.SkipCRDs && len(res.Chart.CRDObjects()) > 0 {
		res.Warnings = append(res.Warnings, "the chart has CRDs in crds/: an install creates them before rendering; they are not part of the rendered manifest")
	}
	inst := opts.NewInstall(run, name, ns)
	inst.ChartPathOptions = cpo
	inst.SetRegistryClient(run.RegistryClient)
	inst.DryRun = true
	inst.DryRunOption = "server"
	inst.PostRenderer = post
	inst.Replace = res.Last != nil // every revision uninstalled: helm upgrade --install replaces

	rel, err := inst.RunWithContext(ctx, res.Chart, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s for release %q (install): %w", res.ChartPath, name, err)
	}
	if res.Last != nil {
		// What Install.replaceRelease stores; a dry run skips it.
		rel.Version = res.Last.Version + 1
	}
	res.Next = rel
	res.Install = true
	return res, nil
}

// renderUpgrade renders res's chart as Helm's upgrade of release name in
// ns with --dry-run=server, from res.Previous.
func renderUpgrade(ctx context.Context, run *action.Configuration, res *Result, name, ns string, cpo action.ChartPathOptions, post postrender.PostRenderer, vals map[string]interface{}, opts Options) (*Result, error) {
	up := opts.NewUpgrade(run, ns)
	up.ChartPathOptions = cpo
	up.SetRegistryClient(run.RegistryClient)
	up.DryRun = true
	up.DryRunOption = "server"
	up.PostRenderer = post

	rel, err := up.RunWithContext(ctx, name, res.Chart, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s for release %q (upgrade from revision %d): %w", res.ChartPath, name, res.Previous.Version, err)
	}
	res.Next = rel
	return res, nil
}
