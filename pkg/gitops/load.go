// Package gitops reads the Flux HelmReleases and Argo CD Applications of a
// GitOps repository checkout (one file or a directory of YAML), pairs those
// of two checkouts (a pull request's base and head) by identity, and turns
// each side into the render request helm-controller or Argo CD would make:
// the chart (fetched with Helm's getters), the values as the controller
// merges them, the release name and namespace, and helm-controller's
// post-renderers. It reaches no cluster.
package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// Limits of one side: a repository of manifests, not a dump.
const (
	// FilesMax bounds the YAML files read on one side.
	FilesMax = 10000
	// BytesMax bounds the bytes read on one side, all files together.
	BytesMax = 512 << 20
)

// Doc is one YAML document of a side: an object with its place.
type Doc struct {
	File string // as found under the side's root (root joined with the relative path)
	Line int    // the document's first line
	// Object is the document decoded; Node keeps its lines.
	Object map[string]interface{}
	Node   *yaml.Node
	Ref    ObjectRef
	// Built is the document as a Flux Kustomization's build left it (nil
	// when none builds it), BuiltBy names that Kustomization, Vars the
	// ConfigMaps and Secrets whose variables it substituted (see
	// applyKustomizations).
	Built   []byte
	BuiltBy string
	Vars    []*Doc
}

// ObjectRef names an object: kind, namespace ("default" when the document
// names none, as the controllers' own namespace would be unknown), name.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

// String is KIND NAMESPACE/NAME.
func (r ObjectRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// key is the identity objects are paired by: the kind, not its version
// (v2beta2 → v2 is the same HelmRelease).
func (r ObjectRef) key() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// Side is one checkout: its root (the directory GitRepository chart paths
// and Argo CD source paths are relative to) and every object in its files.
type Side struct {
	Root string
	Docs []*Doc
	// secretValues: see SecretValues.
	secretValues [][]byte
}

// Load reads path, a YAML file or a directory searched recursively for
// .yaml and .yml files (hidden directories such as .git, and charts,
// skipped), each
// read bounded, every document of each, as the Flux Kustomizations among
// them build it (applyKustomizations). A document that is not an object
// with apiVersion, kind and metadata.name is skipped (kustomization.yaml,
// values files); one that is not YAML is an error naming the file.
func Load(path string) (*Side, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	side := &Side{Root: path}
	files := []string{path}
	if fi.IsDir() {
		if files, err = yamlFiles(path); err != nil {
			return nil, err
		}
	} else {
		side.Root = filepath.Dir(path)
	}
	var total int64
	for _, f := range files {
		data, err := side.readFile(f, "a GitOps manifest", inputfile.ManifestMax, &total)
		if err != nil {
			return nil, err
		}
		docs, err := parseDocs(f, data)
		if err != nil {
			return nil, err
		}
		side.Docs = append(side.Docs, docs...)
	}
	if err := side.applyKustomizations(); err != nil {
		return nil, err
	}
	return side, nil
}

// readFile reads f, a file of the checkout (inside it), at most max
// bytes, adding them to *total, which may not pass BytesMax: what one side
// reads together.
func (s *Side) readFile(f, purpose string, max int64, total *int64) ([]byte, error) {
	if _, err := s.inside(f); err != nil {
		return nil, err
	}
	data, err := inputfile.Read(f, purpose, max)
	if err != nil {
		return nil, err
	}
	if *total += int64(len(data)); *total > BytesMax {
		return nil, fmt.Errorf("%s: the files read hold more than %s together", s.Root, inputfile.Size(BytesMax))
	}
	return data, nil
}

// inside returns path when it stays inside the checkout s once links are
// followed (a pull request chooses the paths its objects name: a chart
// path or a value file may not read the CI runner's other files), and an
// error naming it, or the link on its way that leads out, otherwise. Each
// component is looked at in turn, so nothing outside the checkout is
// looked at before the link leading there is refused: the error never
// tells what exists there. A missing path is an os.IsNotExist error.
func (s *Side) inside(path string) (string, error) {
	rel, err := filepath.Rel(s.Root, path)
	if err != nil || escapes(rel) {
		return "", fmt.Errorf("%s is outside the checkout %s", path, s.Root)
	}
	root, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return "", err
	}
	p := s.Root
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if name == "." {
			continue
		}
		p = filepath.Join(p, name)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, err := followLink(root, p, s.relName(p)); err != nil {
				return "", err
			}
		}
	}
	return path, nil
}

// escapes reports whether the relative path rel leads out of its base.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// yamlFiles lists the .yaml and .yml files under dir, sorted, at most
// FilesMax; a chart's directory (one holding a Chart.yaml) is left out.
func yamlFiles(dir string) ([]string, error) {
	return filesUnder(dir, "YAML", func(p string) bool {
		ext := filepath.Ext(p)
		return ext == ".yaml" || ext == ".yml"
	})
}

// filesUnder lists the files under dir that match (what names them in
// errors), sorted, at most FilesMax; hidden directories and a chart's
// directory (one holding a Chart.yaml) are left out.
func filesUnder(dir, what string, match func(string) bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "Chart.yaml")); err == nil && p != dir {
				return filepath.SkipDir // a chart: templates, not manifests
			}
			return nil
		}
		if match(p) {
			if len(out) == FilesMax {
				return fmt.Errorf("%s: more than %d %s files", dir, FilesMax, what)
			}
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// parseDocs decodes every document of data, keeping each one's nodes for
// their line numbers.
func parseDocs(file string, data []byte) ([]*Doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Doc
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue // empty, or a list or scalar: not an object
		}
		var obj map[string]interface{}
		if err := n.Decode(&obj); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n.Line, err)
		}
		ref, ok := objectRef(obj)
		if !ok {
			continue
		}
		if err := checkMetadata(file, n.Content[0], obj, ref); err != nil {
			return nil, err
		}
		out = append(out, &Doc{File: file, Line: n.Content[0].Line, Object: obj, Node: n.Content[0], Ref: ref})
	}
}

// objectRef is obj's identity, false when it is no Kubernetes object.
func objectRef(obj map[string]interface{}) (ObjectRef, bool) {
	api, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]interface{})
	name, _ := meta["name"].(string)
	if api == "" || kind == "" || name == "" {
		return ObjectRef{}, false
	}
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = "default"
	}
	return ObjectRef{APIVersion: api, Kind: kind, Namespace: ns, Name: name}, true
}

// Doc is the document of the object ref, nil when the side holds none.
func (s *Side) Doc(ref ObjectRef) *Doc {
	for _, d := range s.Docs {
		if d.Ref == ref {
			return d
		}
	}
	return nil
}

// find returns the object of kind named name in namespace ns, nil when
// the side holds none.
func (s *Side) find(kind, ns, name string) *Doc {
	for _, d := range s.Docs {
		if d.Ref.Kind == kind && d.Ref.Namespace == ns && d.Ref.Name == name {
			return d
		}
	}
	return nil
}

// lineOf is the line of the node at path (map keys) under n, the deepest
// one found: the place a reviewer reads a field.
func lineOf(n *yaml.Node, path ...string) int {
	line := n.Line
	for _, k := range path {
		key, index, isItem := strings.Cut(strings.TrimSuffix(k, "]"), "[")
		next := child(n, key)
		if i, err := strconv.Atoi(index); isItem && err == nil && next != nil && next.Kind == yaml.SequenceNode && i < len(next.Content) {
			next = next.Content[i]
		}
		if next == nil {
			return line
		}
		n, line = next, next.Line
	}
	return line
}

// child is the value node of key k in the mapping n, nil if none.
func child(n *yaml.Node, k string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return nil
}

// firstChange is the line of the first node of head that base does not
// have or has otherwise (a scalar, a key, a list item), 0 when they are
// equal: where SARIF points a reviewer.
func firstChange(base, head *yaml.Node) int {
	if head == nil {
		return 0
	}
	if base == nil || base.Kind != head.Kind {
		return head.Line
	}
	switch head.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(head.Content); i += 2 {
			if l := firstChange(child(base, head.Content[i].Value), head.Content[i+1]); l != 0 {
				if child(base, head.Content[i].Value) == nil {
					return head.Content[i].Line
				}
				return l
			}
		}
		if len(base.Content) != len(head.Content) {
			return head.Line // a key removed
		}
	case yaml.SequenceNode:
		for i, c := range head.Content {
			var b *yaml.Node
			if i < len(base.Content) {
				b = base.Content[i]
			}
			if l := firstChange(b, c); l != 0 {
				return l
			}
		}
		if len(base.Content) != len(head.Content) {
			return head.Line
		}
	case yaml.ScalarNode:
		if base.Value != head.Value || base.Tag != head.Tag {
			return scalarChange(base, head)
		}
	case yaml.AliasNode:
		return firstChange(base.Alias, head.Alias)
	}
	return 0
}

// scalarChange is the line of a changed scalar; in a block scalar (a
// ConfigMap's values.yaml: |), the line of its first changed line.
func scalarChange(base, head *yaml.Node) int {
	if head.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		return head.Line
	}
	was, now := strings.Split(base.Value, "\n"), strings.Split(head.Value, "\n")
	for i := range now {
		if i >= len(was) || was[i] != now[i] {
			return head.Line + 1 + i
		}
	}
	return head.Line
}
