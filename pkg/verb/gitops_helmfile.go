package verb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// planHelmfile plans the releases of a helmfile state whose render, chart
// or version differs between the base and the head, environment by
// environment (gitops.RenderHelmfile: the user's helmfile renders both
// sides). What `helmfile apply` then does: an install, an upgrade, an
// uninstall for a release the head marks installed: false; a release the
// head no longer names is left as it is (helmfile tracks no release), and
// a note says so; a release uninstalled in one namespace and installed in
// another is a move, its StatefulSets' claims lost as for Helmsman's
// (markLostClaims). Scratch files go to dir.
func (c *Config) planHelmfile(ctx context.Context, req GitOpsRequest, dir string) ([]GitOpsPlanned, error) {
	st, err := c.renderHelmfiles(ctx, req, dir)
	if st == nil || err != nil {
		return nil, err
	}
	var out []GitOpsPlanned
	for i, k := range st.keys() {
		planned, err := c.planHelmfileRelease(ctx, req, st, st.base[k], st.head[k], filepath.Join(dir, fmt.Sprintf("helmfile-%d", i)))
		if err != nil {
			return nil, err
		}
		if planned != nil {
			out = append(out, *planned)
		}
	}
	markLostClaims(out, helmfileUninstalls(out), "helmfile apply")
	return out, nil
}

// helmfileUninstalls are the references' names (NAME@ENVIRONMENT) of the
// releases out uninstalls: one the head also installs in another
// namespace is moved there, the helmfile way (installed: false on the old
// entry), and helmfile apply reinstalls it.
func helmfileUninstalls(out []GitOpsPlanned) map[string]bool {
	names := map[string]bool{}
	for _, g := range out {
		if g.Planned != nil && g.Change.Head == nil && g.Change.Base != nil {
			names[g.Change.Ref.Name] = true
		}
	}
	return names
}

// helmfileStates are the base's and the head's helmfile states, rendered.
type helmfileStates struct {
	opts               gitops.HelmfileOptions
	bin                string
	baseRoot, headRoot string
	// file is the head's state file, where changes are located.
	file       string
	base, head map[string]*gitops.HelmfileRelease
	timeLimit  time.Duration
	// built are the needs of each side and environment (side/env), from
	// helmfile build, run once each and only for one with a release to plan.
	built map[string]map[string][]string
}

// renderHelmfiles renders the helmfile state of each side that has one, in
// dir; nil when neither has.
func (c *Config) renderHelmfiles(ctx context.Context, req GitOpsRequest, dir string) (*helmfileStates, error) {
	st := &helmfileStates{opts: req.Helmfile, baseRoot: checkoutRoot(req.Base), headRoot: checkoutRoot(req.Head),
		base: map[string]*gitops.HelmfileRelease{}, head: map[string]*gitops.HelmfileRelease{},
		timeLimit: req.Render.TimeLimit(), built: map[string]map[string][]string{}}
	baseHas, headHas := gitops.HasHelmfile(st.baseRoot, st.opts), gitops.HasHelmfile(st.headRoot, st.opts)
	if !baseHas && !headHas {
		return nil, nil
	}
	bin, err := gitops.HelmfileBinary(st.opts)
	if err != nil {
		return nil, err
	}
	st.bin, st.opts.KubeVersion = bin, req.Render.KubeVersion
	render := func(root, side string) (map[string]*gitops.HelmfileRelease, error) {
		c.progress("Rendering the %s's helmfile state with %s", side, bin)
		ctx, cancel := context.WithTimeout(ctx, st.timeLimit)
		defer cancel()
		rels, err := gitops.RenderHelmfile(ctx, bin, root, filepath.Join(dir, "helmfile-"+side), st.opts)
		if err != nil {
			return nil, c.Sanitizer.Error(fmt.Errorf("%s: %w", side, err))
		}
		return rels, nil
	}
	if baseHas {
		if st.base, err = render(st.baseRoot, "base"); err != nil {
			return nil, err
		}
	}
	if headHas {
		if st.head, err = render(st.headRoot, "head"); err != nil {
			return nil, err
		}
	}
	st.file = helmfileFile(st.headRoot, st.opts)
	return st, nil
}

// keys are the releases of either side, sorted.
func (st *helmfileStates) keys() []string {
	keys := make([]string, 0, len(st.base)+len(st.head))
	for k := range st.base {
		keys = append(keys, k)
	}
	for k := range st.head {
		if st.base[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// needsOf is the release r's needs in its side's state.
func (st *helmfileStates) needsOf(ctx context.Context, r *gitops.HelmfileRelease) ([]string, error) {
	root, side := st.headRoot, "head"
	if st.head[r.Key()] != r {
		root, side = st.baseRoot, "base"
	}
	k := side + "/" + r.Environment
	if _, ok := st.built[k]; !ok {
		ctx, cancel := context.WithTimeout(ctx, st.timeLimit)
		defer cancel()
		needs, err := gitops.HelmfileNeeds(ctx, st.bin, root, r.Environment, st.opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", side, err)
		}
		st.built[k] = needs
	}
	if needs, ok := st.built[k][r.Namespace+"/"+r.Name]; ok {
		return needs, nil
	}
	return st.built[k]["/"+r.Name], nil // a release of no namespace (helm's default)
}

// planHelmfileRelease plans what helmfile apply does to the release b of
// the base becoming h of the head (either nil when its side has none), in
// sub; nil when it does nothing.
func (c *Config) planHelmfileRelease(ctx context.Context, req GitOpsRequest, st *helmfileStates, b, h *gitops.HelmfileRelease, sub string) (*GitOpsPlanned, error) {
	var escapeOnly *redact.Sanitizer
	bOn := b != nil && b.Installed && b.Rendered
	hOn := h != nil && h.Installed && h.Rendered
	ref := b
	if h != nil {
		ref = h
	}
	line := gitops.HelmfileLine(st.file, ref.Name)
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return nil, err
	}
	var ch gitops.Change
	ch.Ref, ch.File, ch.Line = ref.Ref(), st.file, line
	switch {
	case !bOn && !hOn:
		return nil, nil
	case bOn && h == nil:
		return &GitOpsPlanned{Change: ch, Unchanged: true, Note: escapeOnly.Text(fmt.Sprintf("no longer in the head's helmfile state (environment %s): helmfile leaves release %s in namespace %s as it is (it uninstalls only a release marked installed: false)", b.Environment, b.Name, b.Namespace), redact.MessageLimit)}, nil
	case bOn && hOn && b.Manifest == h.Manifest && b.Chart == h.Chart && b.Version == h.Version:
		return nil, nil
	}
	var err error
	if bOn {
		if ch.Base, err = b.Release(filepath.Join(sub, "base"), st.file, line); err != nil {
			return nil, err
		}
	}
	if hOn {
		if ch.Head, err = h.Release(filepath.Join(sub, "head"), st.file, line); err != nil {
			return nil, err
		}
	}
	c.progress("Planning %s (%s:%d)", ch.Ref, ch.File, ch.Line)
	planned, decision, err := c.planHelmfileChange(ctx, req, ch, b, h, sub)
	if err != nil {
		return nil, c.Sanitizer.Error(locateChange(err, ch.Ref, ch.File, ch.Line))
	}
	if needs, err := st.needsOf(ctx, ref); err != nil {
		return nil, c.Sanitizer.Error(err)
	} else if len(needs) > 0 {
		decision += ", after " + strings.Join(needs, ", ") + " (needs)"
	}
	planned.Plan.Notes = append([]string{escapeOnly.Text(decision+"; rendered by helmfile template (environment "+ref.Environment+"), as helm template renders an install", redact.MessageLimit)}, planned.Plan.Notes...)
	return &GitOpsPlanned{Change: ch, Planned: planned}, nil
}

// planHelmfileChange plans the change ch helmfile apply makes (an
// uninstall when the head's release h is off, an install when the base's b
// is, else an upgrade), and says which.
func (c *Config) planHelmfileChange(ctx context.Context, req GitOpsRequest, ch gitops.Change, b, h *gitops.HelmfileRelease, sub string) (*Planned, string, error) {
	switch {
	case ch.Head == nil:
		planned, err := c.planHelmsmanUninstall(ctx, req, ch.Base, sub)
		return planned, fmt.Sprintf("installed: false in the head: helmfile apply uninstalls release %s from namespace %s", b.Name, b.Namespace), err
	case ch.Base == nil:
		planned, err := c.planGitOpsChange(ctx, req, ch, nil, sub)
		return planned, fmt.Sprintf("helmfile apply installs release %s in namespace %s (chart %s)", h.Name, h.Namespace, chartAt(h)), err
	}
	planned, err := c.planGitOpsChange(ctx, req, ch, nil, sub)
	return planned, fmt.Sprintf("helmfile apply upgrades release %s in namespace %s (chart %s → %s)", h.Name, h.Namespace, chartAt(b), chartAt(h)), err
}

// chartAt is a release's chart as its state names it, @version when set.
func chartAt(r *gitops.HelmfileRelease) string {
	if r.Version == "" {
		return r.Chart
	}
	return r.Chart + "@" + r.Version
}

// checkoutRoot is the directory of a checkout given as a directory or a
// file.
func checkoutRoot(p string) string {
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return filepath.Dir(p)
	}
	return p
}

// helmfileFile is the head's helmfile state file, for locating changes:
// --helmfile-file, else the first of helmfile's default files there.
func helmfileFile(root string, opts gitops.HelmfileOptions) string {
	if opts.File != "" {
		return filepath.Join(root, filepath.FromSlash(opts.File))
	}
	for _, n := range []string{"helmfile.yaml.gotmpl", "helmfile.yaml"} {
		if _, err := os.Stat(filepath.Join(root, n)); err == nil {
			return filepath.Join(root, n)
		}
	}
	return filepath.Join(root, "helmfile.d")
}
