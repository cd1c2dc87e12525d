package gitops

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	yaml "go.yaml.in/yaml/v3"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// What Helmsman does with a release (its decision_maker.go): the steps of
// a pull request's plan.
const (
	HelmsmanInstall   = "install"
	HelmsmanUpgrade   = "upgrade"
	HelmsmanUninstall = "uninstall"
)

// HelmsmanStep is one thing Helmsman does because of the pull request: Op
// on a release, planned as the Change says (an upgrade: Base to Head; an
// install: Head; an uninstall: Base), or, Op "", nothing (Decision says
// why: a protected release, a release left running).
type HelmsmanStep struct {
	Change
	Op string
	// Decision is what Helmsman decides, as a plan note.
	Decision string
	// NoHooks is the app's noHooks (or --no-hooks in its helmFlags);
	// Force is helm upgrade --force (Helmsman's --force-upgrades, or the
	// app's helmFlags).
	NoHooks, Force bool
	// Reinstall marks the uninstall and the install of one release moved
	// (namespace or name) or replaced (another chart, --replace-on-rename).
	Reinstall bool
	// ReplaceOnRename: Helmsman runs with --replace-on-rename, so this
	// upgrade is an uninstall and an install when the chart's name (its
	// Chart.yaml's) differs, which only the fetched charts tell.
	ReplaceOnRename bool
}

// HelmsmanChanges reads the Helmsman desired states of the base and head
// checkouts, pairs them (by their files), and returns what Helmsman does
// about every app whose release renders differently, in the order Helmsman
// runs it (releases it no longer tracks uninstalled first), and the values
// the job's environment put into the files (to be masked: a set value
// from $SECRET is one).
func HelmsmanChanges(baseRoot, headRoot string, opts HelmsmanOptions) ([]HelmsmanStep, [][]byte, error) {
	bases, err := LoadHelmsman(baseRoot, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("base %w", err)
	}
	heads, err := LoadHelmsman(headRoot, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("head %w", err)
	}
	baseSide, headSide := rootSide(baseRoot), rootSide(headRoot)
	var steps []HelmsmanStep
	var secrets [][]byte
	// pair adds what Helmsman does when b (nil: none) becomes h; the
	// values to mask are known before any error is returned.
	pair := func(b, h *HelmsmanState) error {
		s, err := helmsmanPair(&hsSide{side: baseSide, opts: opts, st: b, sub: &substituter{opts: opts}}, &hsSide{side: headSide, opts: opts, st: h, sub: &substituter{opts: opts}})
		steps = append(steps, s...)
		secrets = append(secrets, h.maskable()...) // with the repositories' passwords resolving found
		if b != nil {
			secrets = append(secrets, b.maskable()...)
		}
		return err
	}
	byID := map[string]*HelmsmanState{}
	for _, st := range bases {
		byID[st.ID] = st
	}
	seen := map[string]bool{}
	for _, h := range heads {
		if h.missing {
			return nil, secrets, fmt.Errorf("head: Helmsman desired state file %s is not in the checkout %s", h.ID, headRoot)
		}
		seen[h.ID] = true
		if err := pair(byID[h.ID], h); err != nil {
			return nil, secrets, err
		}
	}
	for _, b := range bases {
		if seen[b.ID] || b.missing {
			continue
		}
		// A DSF of the base the head no longer reads as one (broken, or
		// its apps all gone) is still the file Helmsman is run with:
		// read as one, its error is the pull request's, its apps none.
		if _, err := os.Lstat(filepath.Join(headSide.Root, filepath.FromSlash(b.Files[0]))); err == nil {
			h, err := headSide.loadState(b.Files, opts, true)
			if err != nil {
				return nil, secrets, fmt.Errorf("head %w", err)
			}
			if err := pair(b, h); err != nil {
				return nil, secrets, err
			}
			continue
		}
		secrets = append(secrets, b.maskable()...)
		steps = append(steps, HelmsmanStep{Change: Change{Ref: ObjectRef{Kind: "HelmsmanState", Name: b.ID}, File: b.Files[0], Line: 1},
			Decision: fmt.Sprintf("Helmsman desired state %s is not in the head: Helmsman is no longer run with it, and its releases stay as they are", b.ID)})
	}
	return steps, secrets, nil
}

// maskable are the values the job's environment put into st's files but
// those that name what a report must name: an app's release name,
// namespace, chart or version, a repository's URL (its password is
// masked on its own). A value that is a secret is masked everywhere.
func (st *HelmsmanState) maskable() [][]byte {
	names := map[string]bool{}
	for _, a := range st.state.Apps {
		names[a.Name], names[a.Namespace], names[a.Chart], names[a.Version] = true, true, true, true
	}
	var out [][]byte
	for _, v := range st.secrets {
		shown := names[string(v)]
		for _, u := range st.state.HelmRepos {
			if !shown && strings.Contains(u, string(v)) {
				if p, err := url.Parse(u); err == nil && p.User != nil {
					pw, _ := p.User.Password()
					shown = !strings.Contains(p.User.Username()+":"+pw, string(v))
				} else {
					shown = true
				}
			}
		}
		if !shown {
			out = append(out, v)
		}
	}
	return out
}

// rootSide is the Side of a checkout root (a file's directory for a file).
func rootSide(root string) *Side {
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		return &Side{Root: filepath.Dir(root)}
	}
	return &Side{Root: root}
}

// helmsmanPair decides what Helmsman does when the state of base (nil or
// missing: none) becomes the one of head, as its decide,
// inspectUpgradeScenario and cleanUntrackedReleases do for a cluster where
// base was applied. A release is its name and namespace, as Helmsman
// keys it: an enabled app of the head whose release the base installed is
// upgraded when it renders differently (unless protected), a new one
// installed; a disabled one uninstalls it (unless protected); a release
// no app of the head names is untracked: uninstalled when its namespace is
// one the head defines and untracked releases are not kept. An app whose
// name or namespace changes is so a new release installed and an old one
// untracked: a move.
func helmsmanPair(b, h *hsSide) ([]HelmsmanStep, error) {
	baseApps, headApps, err := resolvePair(b, h)
	if err != nil {
		return nil, err
	}
	installed := map[string]*hsResolved{} // the base's releases
	for _, br := range baseApps {
		if br.release != nil {
			installed[releaseKey(br.app)] = br
		}
	}
	loc := &locator{base: b, head: h}
	tracked := map[string]bool{}
	var uninstalls, others []HelmsmanStep
	var installs []int // of others: new releases, a move's when an old one goes
	for _, key := range slices.Sorted(maps.Keys(headApps)) {
		hr := headApps[key]
		tracked[releaseKey(hr.app)] = true
		step, ok, err := headStep(h, loc, key, hr, installed[releaseKey(hr.app)])
		switch {
		case err != nil:
			return nil, err
		case !ok:
			continue
		case step.Op == HelmsmanUninstall:
			uninstalls = append(uninstalls, step)
			continue
		case step.Op == HelmsmanInstall:
			installs = append(installs, len(others))
		}
		others = append(others, step)
	}
	gone := map[string]bool{} // app keys whose old release is uninstalled
	for _, key := range slices.Sorted(maps.Keys(baseApps)) {
		br := baseApps[key]
		if br.release == nil || tracked[releaseKey(br.app)] {
			continue
		}
		step := untracked(br, h, loc, key)
		if step.Op == HelmsmanUninstall {
			gone[key] = true
		}
		uninstalls = append(uninstalls, step)
	}
	markMoves(others, installs, uninstalls, gone, loc, headApps)
	return append(uninstalls, others...), nil
}

// resolvePair resolves the apps of base (none when it has no state) and
// of head.
func resolvePair(b, h *hsSide) (baseApps, headApps map[string]*hsResolved, err error) {
	baseApps = map[string]*hsResolved{}
	if b.st != nil && !b.st.missing {
		if baseApps, err = b.resolveApps(); err != nil {
			return nil, nil, fmt.Errorf("base %w", err)
		}
	}
	if headApps, err = h.resolveApps(); err != nil {
		return nil, nil, fmt.Errorf("head %w", err)
	}
	return baseApps, headApps, nil
}

// releaseKey is the release of app a as Helmsman keys it: namespace/name.
func releaseKey(a *hsApp) string { return a.Namespace + "/" + a.Name }

// headStep is what Helmsman does for the head's app key (hr), whose
// release the base installed as br (nil when it did not): ok is false when
// it does nothing (not installed and disabled, or unchanged).
func headStep(h *hsSide, loc *locator, key string, hr, br *hsResolved) (step HelmsmanStep, ok bool, err error) {
	if br == nil {
		if hr.release == nil {
			return step, false, nil // disabled, and not installed
		}
		if hr.refused != nil {
			return step, false, hr.refused
		}
		file, line := loc.where(key, hr)
		return HelmsmanStep{Change: Change{Ref: hr.release.Object, Head: hr.release, File: file, Line: line}, Op: HelmsmanInstall,
			NoHooks: hr.noHooks, Decision: fmt.Sprintf("Helmsman installs release %s in namespace %s (chart %s)", hr.release.Name, hr.release.Namespace, hr.release.Chart)}, true, nil
	}
	if hr.release != nil && Same(br.release, hr.release) && br.extra == hr.extra {
		return step, false, nil
	}
	file, line := loc.where(key, hr)
	if hr.protected || h.protectedNS(hr.app.Namespace) {
		return protectedStep(br, file, line), true, nil
	}
	if hr.release == nil {
		return uninstallStep(br, file, line, false,
			fmt.Sprintf("enabled: false: Helmsman uninstalls release %s from namespace %s", br.release.Name, br.release.Namespace)), true, nil
	}
	for _, r := range []*hsResolved{hr, br} {
		if r.refused != nil {
			return step, false, r.refused
		}
	}
	return HelmsmanStep{Change: Change{Ref: hr.release.Object, Base: br.release, Head: hr.release, File: file, Line: line}, Op: HelmsmanUpgrade,
		NoHooks: hr.noHooks, Force: hr.force || h.opts.ForceUpgrades, ReplaceOnRename: h.opts.ReplaceOnRename,
		Decision: fmt.Sprintf("Helmsman upgrades release %s in namespace %s: chart %s → %s", hr.release.Name, hr.release.Namespace, br.release.Chart, hr.release.Chart)}, true, nil
}

// markMoves marks the moves among the installs (indexes of others): a
// release whose app's key stays but whose name or namespace changes moves,
// its install following the old one's uninstall (gone: the app keys whose
// old release is uninstalled).
func markMoves(others []HelmsmanStep, installs []int, uninstalls []HelmsmanStep, gone map[string]bool, loc *locator, headApps map[string]*hsResolved) {
	for _, i := range installs {
		in := &others[i]
		if !gone[in.Ref.Name] {
			continue
		}
		in.Reinstall = true
		for j := range uninstalls {
			if uninstalls[j].Ref.Name == in.Ref.Name && uninstalls[j].Op == HelmsmanUninstall {
				u := &uninstalls[j]
				u.Reinstall = true
				in.Decision = fmt.Sprintf("release %s/%s becomes %s/%s: Helmsman uninstalls the old one (it no longer tracks it) and installs the new one: its objects are deleted and created anew, and a StatefulSet's new claims start empty",
					u.Base.Namespace, u.Base.Name, in.Head.Namespace, in.Head.Name)
				in.File, in.Line = loc.where(in.Ref.Name, headApps[in.Ref.Name])
				u.File, u.Line = in.File, in.Line
			}
		}
	}
}

// protectedNS reports whether the head's state protects namespace ns.
func (h *hsSide) protectedNS(ns string) bool {
	n := h.st.state.Namespaces[ns]
	return n != nil && n.Protected
}

// protectedStep is a change Helmsman does not make: the release is
// protected (the app, or its namespace).
func protectedStep(br *hsResolved, file string, line int) HelmsmanStep {
	return HelmsmanStep{Change: Change{Ref: br.release.Object, File: file, Line: line},
		Decision: fmt.Sprintf("release %s in namespace %s is PROTECTED (protected: true on the app or its namespace): Helmsman makes no change to it, so nothing is planned", br.release.Name, br.release.Namespace)}
}

func uninstallStep(br *hsResolved, file string, line int, reinstall bool, decision string) HelmsmanStep {
	return HelmsmanStep{Change: Change{Ref: br.release.Object, Base: br.release, File: file, Line: line}, Op: HelmsmanUninstall, Reinstall: reinstall, Decision: decision}
}

// untracked is what becomes of br's release once no app of the head names
// it (cleanUntrackedReleases): uninstalled when its namespace is one the
// head's state defines and untracked releases are not kept (protection
// does not apply), left running otherwise.
func untracked(br *hsResolved, h *hsSide, loc *locator, key string) HelmsmanStep {
	file, line := loc.whereGone(key, br)
	r := br.release
	if _, defined := h.st.state.Namespaces[r.Namespace]; !defined || h.opts.KeepUntracked {
		why := "its namespace is not among the head's namespaces, whose releases only Helmsman cleans"
		if h.opts.KeepUntracked {
			why = "--keep-untracked-releases"
		}
		return HelmsmanStep{Change: Change{Ref: r.Object, File: file, Line: line},
			Decision: fmt.Sprintf("release %s in namespace %s is no longer tracked by the head and stays installed (%s)", r.Name, r.Namespace, why)}
	}
	return uninstallStep(br, file, line, false,
		fmt.Sprintf("release %s in namespace %s is no longer tracked by the head: Helmsman uninstalls it (untracked releases are deleted unless --keep-untracked-releases)", r.Name, r.Namespace))
}

// locator finds the line of a DSF (or values file) a reviewer reads an
// app's change at.
type locator struct {
	base, head *hsSide
}

// where is the first changed line of the head's block of app key (of r),
// else of one of its values files, else of its DSF, else the block's
// first line.
func (l *locator) where(key string, r *hsResolved) (string, int) {
	file := r.app.file
	data := l.head.st.raw[file]
	start, end := appBlock(file, data, key)
	changed := l.changedLines(file)
	for _, n := range changed {
		if n >= start && n <= end {
			return file, n
		}
	}
	files := r.app.ValuesFiles
	if r.app.ValuesFile != "" {
		files = []string{r.app.ValuesFile}
	}
	for _, f := range files {
		if c := l.changedLines(f); len(c) > 0 {
			return f, c[0]
		}
	}
	if len(changed) > 0 {
		return file, changed[0]
	}
	return file, start
}

// whereGone is where the head removed app key of the base (br): the first
// changed line of the head's DSF of the same name, or of the head's first
// DSF.
func (l *locator) whereGone(key string, br *hsResolved) (string, int) {
	if hr, ok := l.head.st.state.Apps[key]; ok && hr.file != "" {
		start, _ := appBlock(hr.file, l.head.st.raw[hr.file], key)
		if c := l.changedLines(hr.file); len(c) > 0 {
			return hr.file, c[0]
		}
		return hr.file, start
	}
	file := filepath.Join(l.head.side.Root, l.base.side.relName(br.app.file))
	if _, ok := l.head.st.raw[file]; !ok {
		file = filepath.Join(l.head.side.Root, filepath.FromSlash(l.head.st.Files[0]))
	}
	if c := l.changedLines(file); len(c) > 0 {
		return file, c[0]
	}
	return file, 1
}

// changedLines are the lines of the head's file that the base's file of
// the same path does not have (inserted or replaced; a deletion counts as
// the line after it), in order; every line when the base has no such file.
func (l *locator) changedLines(file string) []int {
	head, err := l.read(l.head, file)
	if err != nil {
		return nil
	}
	baseFile := filepath.Join(l.base.side.Root, filepath.FromSlash(l.head.side.relName(file)))
	base, err := l.read(l.base, baseFile)
	if err != nil {
		base = nil
	}
	a, b := splitLines(base), splitLines(head)
	var out []int
	for _, op := range difflib.NewMatcher(a, b).GetOpCodes() {
		switch op.Tag {
		case 'r', 'i':
			for j := op.J1; j < op.J2; j++ {
				out = append(out, j+1)
			}
		case 'd':
			out = append(out, min(op.J1+1, max(len(b), 1)))
		}
	}
	sort.Ints(out)
	return out
}

// read is file of side, as loaded (a DSF) or read bounded (a values file).
func (l *locator) read(s *hsSide, file string) ([]byte, error) {
	if s.st != nil {
		if data, ok := s.st.raw[file]; ok {
			return data, nil
		}
	}
	if _, err := s.side.inside(file); err != nil {
		return nil, err
	}
	return readBounded(file)
}

func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// appBlock is the first and last line of app key's definition in a DSF:
// in YAML, from its key under apps to the next key; in TOML, the tables
// [apps.KEY] and [apps.KEY.*]. 0, 0 when the file does not define it.
func appBlock(file string, data []byte, key string) (int, int) {
	lines := splitLines(data)
	switch strings.ToLower(filepath.Ext(file)) {
	case ".toml", ".tml":
		start, end := 0, 0
		for i, line := range lines {
			t := strings.TrimSpace(line)
			if !strings.HasPrefix(t, "[") {
				continue
			}
			path := tomlHeader(t)
			inApp := len(path) >= 2 && path[0] == "apps" && path[1] == key
			switch {
			case inApp && start == 0:
				start = i + 1
			case !inApp && start != 0 && end == 0:
				end = i
			}
		}
		if start != 0 && end == 0 {
			end = len(lines)
		}
		return start, end
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0, 0
	}
	top := doc.Content[0]
	apps := child(top, "apps")
	if apps == nil || apps.Kind != yaml.MappingNode {
		return 0, 0
	}
	for i := 0; i+1 < len(apps.Content); i += 2 {
		if apps.Content[i].Value != key {
			continue
		}
		start, end := apps.Content[i].Line, len(lines)
		if i+2 < len(apps.Content) {
			end = apps.Content[i+2].Line - 1
		} else {
			// The last app: up to the next top-level key after apps.
			for j := 0; j+1 < len(top.Content); j += 2 {
				if l := top.Content[j].Line; l > start && l-1 < end {
					end = l - 1
				}
			}
		}
		return start, end
	}
	return 0, 0
}

// tomlHeader is the key path of a TOML table header ([a.b."c"] or
// [[a.b]]), quotes removed.
func tomlHeader(t string) []string {
	t = strings.Trim(strings.TrimSpace(strings.SplitN(t, "]", 2)[0]), "[ ")
	var out []string
	var cur bytes.Buffer
	quote := rune(0)
	for _, r := range t {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote = r
		case quote == 0 && r == '.':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// appLine is the first line of app key's definition in file, 1 when not
// found.
func appLine(file string, data []byte, key string) int {
	if start, _ := appBlock(file, data, key); start > 0 {
		return start
	}
	return 1
}

// readBounded reads a values file a locator compares, bounded.
func readBounded(file string) ([]byte, error) {
	return inputfile.Read(file, "a values file", inputfile.ValuesMax)
}
