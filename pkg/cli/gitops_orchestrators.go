package cli

import (
	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
)

// addHelmsmanFlags adds the flags that say how the job runs Helmsman, so
// that gitops plans what that Helmsman does with the desired state files.
func addHelmsmanFlags(fs *pflag.FlagSet, o *gitops.HelmsmanOptions) {
	fs.StringArrayVar(&o.Files, "helmsman-file", nil, "a Helmsman desired state file the job runs helmsman -f with, relative to each checkout (repeatable, merged in order as helmsman merges them; default: every TOML or YAML file shaped like a DSF, each on its own)")
	fs.StringVar(&o.Spec, "helmsman-spec", "", "Helmsman's --spec file, relative to each checkout: its stateFiles are merged after the --helmsman-file ones")
	// Each --helmsman-X says the job runs Helmsman with its --X.
	for _, b := range []struct {
		on         *bool
		flag, does string
	}{
		{&o.SubstEnvValues, "subst-env-values", "the job's environment variables are substituted into the apps' values files"},
		{&o.NoEnvSubst, "no-env-subst", "no environment variable is substituted"},
		{&o.NoRecursiveEnvExpand, "no-recursive-env-expand", ""},
		{&o.SkipValidation, "skip-validation", "an unset environment variable is substituted empty instead of stopping it"},
		{&o.KeepUntracked, "keep-untracked-releases", "an app removed from the DSF is not uninstalled"},
		{&o.ReplaceOnRename, "replace-on-rename", "a chart whose name changes is an uninstall and an install"},
		{&o.ForceUpgrades, "force-upgrades", "every upgrade is helm upgrade --force"},
	} {
		help := "Helmsman runs with --" + b.flag
		if b.does != "" {
			help += ": " + b.does
		}
		fs.BoolVar(b.on, "helmsman-"+b.flag, false, help)
	}
}

// addHelmfileFlags adds the flags that say how the job runs helmfile.
func addHelmfileFlags(fs *pflag.FlagSet, o *gitops.HelmfileOptions) {
	fs.StringVar(&o.Binary, "helmfile", "", "the helmfile that renders a checkout's helmfile state (default: $"+gitops.HelmfileEnv+", else helmfile on PATH); it runs what the state asks (exec in templates, prepare hooks), as helmfile diff would")
	fs.StringVar(&o.File, "helmfile-file", "", "the helmfile state, relative to each checkout (helmfile --file; default: helmfile's own lookup)")
	fs.StringArrayVar(&o.Environments, "helmfile-environment", nil, "a helmfile environment to plan (repeatable, each on its own; default: default)")
}
