// Package docs_test checks the documentation as a newcomer meets it: every
// relative link in README.md and docs/*.md leads somewhere, every #anchor
// names a heading of its page (GitHub's slugs), every page in docs/ is in
// the index, and README.md stays short. No network: links with a scheme are
// not followed.
package docs_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// readmeLimit is the size README.md must stay under (issue 8: the front
// door, read in five minutes).
const readmeLimit = 12 * 1024

// docIndex is the page that must list every other page in docs/.
const docIndex = "docs/README.md"

// repo returns the repository as a file system: two levels above this
// package, where go.mod is.
func repo(t *testing.T) fs.FS {
	t.Helper()
	fsys := os.DirFS(filepath.Join("..", ".."))
	if _, err := fs.Stat(fsys, "go.mod"); err != nil {
		t.Fatalf("repository root (../..) not found: %v", err)
	}
	return fsys
}

// docFiles returns README.md and docs/*.md of fsys, slash-separated.
func docFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	files, err := fs.Glob(fsys, "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

func TestLinksResolve(t *testing.T) {
	fsys := repo(t)
	files := docFiles(t, fsys)
	if len(files) < 2 {
		t.Fatalf("found only %v; expected README.md and docs/*.md", files)
	}
	for _, problem := range checkLinks(fsys, files) {
		t.Error(problem)
	}
}

func TestReadmeIsShort(t *testing.T) {
	info, err := fs.Stat(repo(t), "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() >= readmeLimit {
		t.Errorf("README.md is %d bytes; keep it under %d and move details into docs/", info.Size(), readmeLimit)
	}
}

func TestIndexListsEveryPage(t *testing.T) {
	fsys := repo(t)
	for _, problem := range checkIndex(fsys, docIndex, docFiles(t, fsys)) {
		t.Error(problem)
	}
}

// TestCheckLinks proves the checker finds what it must find, on small
// inputs: a check that passes on everything would pass the real docs too.
func TestCheckLinks(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // problems, as substrings, in order; nil: none
	}{
		{
			name: "good links",
			files: map[string]string{
				"README.md":     "# Title\n\n## Try it\n\nSee [usage](docs/usage.md#flags), [try](#try-it), [code](pkg/), [web](https://example.com/x#y), [mail](mailto:a@b.c).\n",
				"docs/usage.md": "# Usage\n\n## Flags\n\nBack to [the README](../README.md#title).\n",
				"pkg/a.go":      "package a\n",
			},
		},
		{
			name:  "missing file",
			files: map[string]string{"README.md": "See [usage](docs/usage.md).\n"},
			want:  []string{`README.md:1: link "docs/usage.md": docs/usage.md does not exist`},
		},
		{
			name: "missing anchor in another page",
			files: map[string]string{
				"README.md":     "See [flags](docs/usage.md#flag).\n",
				"docs/usage.md": "# Usage\n\n## Flags\n",
			},
			want: []string{`README.md:1: link "docs/usage.md#flag": no heading with anchor #flag in docs/usage.md`},
		},
		{
			name:  "missing anchor in the same page",
			files: map[string]string{"README.md": "# A\n\nline\n[b](#b)\n"},
			want:  []string{`README.md:4: link "#b": no heading with anchor #b in README.md`},
		},
		{
			name: "anchor on a file that is not markdown",
			files: map[string]string{
				"README.md": "[x](a.go#L1)\n",
				"a.go":      "package a\n",
			},
		},
		{
			name:  "outside the repository",
			files: map[string]string{"docs/a.md": "[x](../../etc/passwd)\n", "README.md": ""},
			want:  []string{`docs/a.md:1: link "../../etc/passwd": leaves the repository`},
		},
		{
			name:  "links in code are not links",
			files: map[string]string{"README.md": "```sh\necho [x](missing.md)\n```\n\nInline `[x](missing.md)` too.\n\n~~~\n[y](gone.md)\n~~~\n"},
		},
		{
			name:  "image and reference definition",
			files: map[string]string{"README.md": "![logo](img/logo.png)\n\n[ref]: docs/missing.md\n"},
			want: []string{
				`README.md:1: link "img/logo.png": img/logo.png does not exist`,
				`README.md:3: link "docs/missing.md": docs/missing.md does not exist`,
			},
		},
		{
			name: "headings in code do not make anchors",
			files: map[string]string{
				"README.md": "```\n# not a heading\n```\n[x](#not-a-heading)\n",
			},
			want: []string{`README.md:4: link "#not-a-heading": no heading with anchor #not-a-heading in README.md`},
		},
		{
			name: "duplicate headings get numbered anchors",
			files: map[string]string{
				"README.md": "## Notes\n\n## Notes\n\n[first](#notes) [second](#notes-1) [third](#notes-2)\n",
			},
			want: []string{`README.md:5: link "#notes-2": no heading with anchor #notes-2 in README.md`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			var files []string
			for name, text := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(text)}
				if strings.HasSuffix(name, ".md") {
					files = append(files, name)
				}
			}
			slices.Sort(files)
			got := checkLinks(fsys, files)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problem(s), want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCheckIndex(t *testing.T) {
	fsys := fstest.MapFS{
		"docs/README.md": {Data: []byte("# Docs\n\n- [usage](usage.md)\n- [also usage](./usage.md#flags)\n")},
		"docs/usage.md":  {Data: []byte("# Usage\n")},
		"docs/ci.md":     {Data: []byte("# CI\n")},
	}
	got := checkIndex(fsys, "docs/README.md", []string{"README.md", "docs/README.md", "docs/ci.md", "docs/usage.md"})
	want := []string{"docs/README.md does not link to docs/ci.md"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Install", "install"},
		{"Helm plugin (Helm 3 and 4)", "helm-plugin-helm-3-and-4"},
		{"GitHub Actions: the action", "github-actions-the-action"},
		{"JSON plan: `safe-upgrade/v1`", "json-plan-safe-upgradev1"},
		{"`changes[]`", "changes"},
		{"Helm's own failure modes remain", "helms-own-failure-modes-remain"},
		{"How do I …", "how-do-i-"},
		{"kubectl-safe_upgrade and **bold**", "kubectl-safe_upgrade-and-bold"},
		{"See [the docs](docs/README.md) here", "see-the-docs-here"},
		{"Trailing hashes ##", "trailing-hashes"},
		{"Größe 12 KB", "größe-12-kb"},
	}
	for _, tt := range tests {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional title; the text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDefinition matches a reference definition: [label]: target.
	refDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?\s*$`)
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	// codeSpan is inline code (one or more backticks).
	codeSpan = regexp.MustCompile("(`+)[^`]*?`+")
	// scheme marks a link that leaves the repository (https:, mailto:).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one link target found in a page.
type link struct {
	line   int
	target string
}

// page is what the checker needs of one markdown file.
type page struct {
	links   []link
	anchors map[string]bool
}

// parse reads the links and heading anchors of a markdown page, outside
// code blocks and code spans.
func parse(text string) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fence.FindStringSubmatch(line); m != nil {
			marker := m[1]
			switch {
			case inFence == "":
				inFence = marker
			case marker[0] == inFence[0] && len(marker) >= len(inFence):
				inFence = ""
			}
			continue
		}
		if inFence != "" {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if k := seen[s]; k > 0 {
				p.anchors[fmt.Sprintf("%s-%d", s, k)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
		}
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			p.links = append(p.links, link{n, m[1]})
			continue
		}
		plain := codeSpan.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			p.links = append(p.links, link{n, m[1]})
		}
	}
	return p
}

// slug is GitHub's anchor for a heading: the rendered text, lower-cased,
// without punctuation other than hyphens and underscores, spaces as hyphens.
func slug(h string) string {
	h = strings.TrimRight(strings.TrimSpace(h), "#")
	h = inlineLink.ReplaceAllStringFunc(h, func(s string) string {
		// [text](target) renders as text.
		return s[strings.Index(s, "[")+1 : strings.LastIndex(s, "](")]
	})
	h = strings.TrimSpace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks returns one line per broken relative link in files (paths in
// fsys): a target that does not exist, leaves the tree, or names an anchor
// its markdown page does not have.
func checkLinks(fsys fs.FS, files []string) []string {
	pages := map[string]page{}
	load := func(name string) (page, error) {
		if p, ok := pages[name]; ok {
			return p, nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return page{}, err
		}
		p := parse(string(data))
		pages[name] = p
		return p, nil
	}
	var problems []string
	for _, file := range files {
		p, err := load(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		for _, l := range p.links {
			if msg := checkLink(fsys, file, l.target, load); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", file, l.line, l.target, msg))
			}
		}
	}
	return problems
}

// checkLink checks one target of a link in file; "" means it resolves.
func checkLink(fsys fs.FS, file, target string, load func(string) (page, error)) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // external: not followed
	}
	ref, anchor, hasAnchor := strings.Cut(target, "#")
	if i := strings.IndexByte(ref, '?'); i >= 0 {
		ref = ref[:i]
	}
	dest := file
	if ref != "" {
		if strings.HasPrefix(ref, "/") {
			return "absolute path; use a path relative to the page"
		}
		dest = path.Join(path.Dir(file), ref)
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "leaves the repository"
		}
		if _, err := fs.Stat(fsys, dest); err != nil {
			return dest + " does not exist"
		}
	}
	if !hasAnchor || !strings.HasSuffix(dest, ".md") {
		// Anchors into code (#L12) are GitHub's line links, not checked.
		return ""
	}
	p, err := load(dest)
	if err != nil {
		return err.Error()
	}
	if !p.anchors[anchor] {
		return fmt.Sprintf("no heading with anchor #%s in %s", anchor, dest)
	}
	return ""
}

// checkIndex returns one line per page of docs/ (among files) that index
// does not link to.
func checkIndex(fsys fs.FS, index string, files []string) []string {
	data, err := fs.ReadFile(fsys, index)
	if err != nil {
		return []string{err.Error()}
	}
	linked := map[string]bool{}
	for _, l := range parse(string(data)).links {
		ref, _, _ := strings.Cut(l.target, "#")
		if ref != "" && !scheme.MatchString(ref) {
			linked[path.Join(path.Dir(index), ref)] = true
		}
	}
	var problems []string
	for _, f := range files {
		if f != index && strings.HasPrefix(f, path.Dir(index)+"/") && !linked[f] {
			problems = append(problems, fmt.Sprintf("%s does not link to %s", index, f))
		}
	}
	return problems
}
