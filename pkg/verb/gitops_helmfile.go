package verb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// planHelmfile plans the releases of a helmfile state whose render, chart
// or version differs between the base and the head, environment by
// environment (gitops.RenderHelmfile: the user's helmfile renders both
// sides). What `helmfile apply` then does: an install, an upgrade, an
// uninstall for a release the head marks installed: false; a release the
// head no longer names is left as it is (helmfile tracks no release), and
// a note says so. Scratch files go to dir.
func (c *Config) planHelmfile(ctx context.Context, req GitOpsRequest, dir string) ([]GitOpsPlanned, error) {
	opts := req.Helmfile
	baseRoot, headRoot := checkoutRoot(req.Base), checkoutRoot(req.Head)
	baseHas, headHas := gitops.HasHelmfile(baseRoot, opts), gitops.HasHelmfile(headRoot, opts)
	if !baseHas && !headHas {
		return nil, nil
	}
	bin, err := gitops.HelmfileBinary(opts)
	if err != nil {
		return nil, err
	}
	opts.KubeVersion = req.Render.KubeVersion
	render := func(root, side string) (map[string]*gitops.HelmfileRelease, error) {
		c.progress("Rendering the %s's helmfile state with %s", side, bin)
		ctx, cancel := context.WithTimeout(ctx, req.Render.TimeLimit())
		defer cancel()
		rels, err := gitops.RenderHelmfile(ctx, bin, root, filepath.Join(dir, "helmfile-"+side), opts)
		if err != nil {
			return nil, c.Sanitizer.Error(fmt.Errorf("%s: %w", side, err))
		}
		return rels, nil
	}
	base, head := map[string]*gitops.HelmfileRelease{}, map[string]*gitops.HelmfileRelease{}
	if baseHas {
		if base, err = render(baseRoot, "base"); err != nil {
			return nil, err
		}
	}
	if headHas {
		if head, err = render(headRoot, "head"); err != nil {
			return nil, err
		}
	}
	file := helmfileFile(headRoot, opts)
	keys := make([]string, 0, len(base)+len(head))
	for k := range base {
		keys = append(keys, k)
	}
	for k := range head {
		if base[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	// needsOf is a release's needs in its side's state, helmfile build
	// run once an environment and side, and only for one with a release
	// to plan.
	built := map[string]map[string][]string{}
	needsOf := func(r *gitops.HelmfileRelease) ([]string, error) {
		root, side := headRoot, "head"
		if head[r.Key()] != r {
			root, side = baseRoot, "base"
		}
		k := side + "/" + r.Environment
		if _, ok := built[k]; !ok {
			ctx, cancel := context.WithTimeout(ctx, req.Render.TimeLimit())
			defer cancel()
			needs, err := gitops.HelmfileNeeds(ctx, bin, root, r.Environment, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", side, err)
			}
			built[k] = needs
		}
		if needs, ok := built[k][r.Namespace+"/"+r.Name]; ok {
			return needs, nil
		}
		return built[k]["/"+r.Name], nil // a release of no namespace (helm's default)
	}
	var out []GitOpsPlanned
	var escapeOnly *redact.Sanitizer
	for i, k := range keys {
		b, h := base[k], head[k]
		bOn := b != nil && b.Installed && b.Rendered
		hOn := h != nil && h.Installed && h.Rendered
		ref := b
		if h != nil {
			ref = h
		}
		line := gitops.HelmfileLine(file, ref.Name)
		sub := filepath.Join(dir, fmt.Sprintf("helmfile-%d", i))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return nil, err
		}
		var ch gitops.Change
		ch.Ref, ch.File, ch.Line = ref.Ref(), file, line
		var decision string
		switch {
		case !bOn && !hOn:
			continue
		case bOn && h == nil:
			out = append(out, GitOpsPlanned{Change: ch, Unchanged: true, Note: escapeOnly.Text(fmt.Sprintf("no longer in the head's helmfile state (environment %s): helmfile leaves release %s in namespace %s as it is (it uninstalls only a release marked installed: false)", b.Environment, b.Name, b.Namespace), redact.MessageLimit)})
			continue
		case bOn && hOn && b.Manifest == h.Manifest && b.Chart == h.Chart && b.Version == h.Version:
			continue
		}
		if bOn {
			if ch.Base, err = b.Release(filepath.Join(sub, "base"), file, line); err != nil {
				return nil, err
			}
		}
		if hOn {
			if ch.Head, err = h.Release(filepath.Join(sub, "head"), file, line); err != nil {
				return nil, err
			}
		}
		c.progress("Planning %s (%s:%d)", ch.Ref, ch.File, ch.Line)
		var planned *Planned
		switch {
		case !hOn:
			decision = fmt.Sprintf("installed: false in the head: helmfile apply uninstalls release %s from namespace %s", b.Name, b.Namespace)
			planned, err = c.planHelmsmanUninstall(ctx, req, ch.Base, sub)
		case !bOn:
			decision = fmt.Sprintf("helmfile apply installs release %s in namespace %s (chart %s)", h.Name, h.Namespace, chartAt(h))
			planned, err = c.planGitOpsChange(ctx, req, ch, nil, sub)
		default:
			decision = fmt.Sprintf("helmfile apply upgrades release %s in namespace %s (chart %s → %s)", h.Name, h.Namespace, chartAt(b), chartAt(h))
			planned, err = c.planGitOpsChange(ctx, req, ch, nil, sub)
		}
		var named *gitops.NamedError
		if err != nil && !errors.As(err, &named) {
			err = fmt.Errorf("%s (%s:%d): %w", ch.Ref, ch.File, ch.Line, err)
		}
		if err != nil {
			return nil, c.Sanitizer.Error(err)
		}
		if needs, err := needsOf(ref); err != nil {
			return nil, c.Sanitizer.Error(err)
		} else if len(needs) > 0 {
			decision += ", after " + strings.Join(needs, ", ") + " (needs)"
		}
		planned.Plan.Notes = append([]string{escapeOnly.Text(decision+"; rendered by helmfile template (environment "+ref.Environment+"), as helm template renders an install", redact.MessageLimit)}, planned.Plan.Notes...)
		out = append(out, GitOpsPlanned{Change: ch, Planned: planned})
	}
	return out, nil
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
