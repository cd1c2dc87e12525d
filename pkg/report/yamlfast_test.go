package report

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
	kjson "sigs.k8s.io/json"
	syaml "sigs.k8s.io/yaml"
)

// agreesWithYAMLv2 fails t when fastYAML writes content otherwise than
// yaml.v2's Marshal; it returns whether fastYAML wrote it.
func agreesWithYAMLv2(t *testing.T, name string, content map[string]interface{}) bool {
	t.Helper()
	got, ok := fastYAML(content)
	if !ok {
		return false
	}
	want, err := yaml.Marshal(content)
	if err != nil {
		t.Fatalf("%s: yaml.v2: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: fastYAML differs from yaml.v2\n--- yaml.v2\n%s\n--- fastYAML\n%s", name, want, got)
	}
	return true
}

func TestFastYAML(t *testing.T) {
	long := strings.Repeat("word ", 20)
	for _, tc := range []struct {
		name    string
		content map[string]interface{}
		fast    bool // written by fastYAML (else left to yaml.v2)
	}{
		{"scalars", map[string]interface{}{"s": "nginx", "i": int64(3), "n": 3, "f": 0.5, "g": float64(8080), "e": 1e21, "neg": -2.5, "b": true, "c": false, "z": nil}, true},
		{"strings plain", map[string]interface{}{"image": "nginx:1.25", "path": "/usr/bin/env", "label": "app.kubernetes.io/name", "_u": "_x", "words": "hello world", "eq": "a=b,c+d@e", "paren": "(sensitive)", "trailing-colon-mid": "a:b:c"}, true},
		{"digit-led", map[string]interface{}{"version": "1.27.3", "cpu": "500m", "mem": "1.5Gi", "tag": "16-alpine", "surge": "25%", "pct": "a%", "hex": "0x1F", "octal": "0o17", "exp": "1e5", "float": "16.6", "dot": "5.", "huge": "123456789012345678901234567890"}, true},
		{"options", map[string]interface{}{"args": []interface{}{"-c", "--port=80", "--v", "-vvv"}}, true},
		{"strings quoted", map[string]interface{}{"digits": "2", "zero": "0", "octal-looking": "0755", "empty": "", "yes": "yes", "on": "on", "Off": "Off", "null": "null", "Y": "Y"}, true},
		{"keys quoted", map[string]interface{}{"80": "http", "on": int64(1), "": "empty key"}, true},
		{"masked marker", map[string]interface{}{"data": map[string]interface{}{"password": "(sensitive: hmac-sha256:0123456789abcdef)"}}, true},
		{"nesting", map[string]interface{}{
			"spec": map[string]interface{}{
				"containers": []interface{}{
					map[string]interface{}{"name": "app", "args": []interface{}{"--port", "80"}, "ports": []interface{}{map[string]interface{}{"containerPort": int64(80)}}},
					map[string]interface{}{},
					[]interface{}{"a", []interface{}{}, []interface{}{"b", "c"}, map[string]interface{}{"k": []interface{}{"v"}}},
					"scalar",
				},
				"empty":  map[string]interface{}{},
				"none":   []interface{}{},
				"nested": map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{map[string]interface{}{"c": map[string]interface{}{"d": "e"}}}}},
			},
		}, true},
		{"key order", map[string]interface{}{"a10": 1, "a9": 2, "a09": 3, "a-1": 4, "a.1": 5, "A": 6, "_x": 7, "a": 8, "a0": 9, "a00": 10, "a01": 11, "b1c": 12, "b01c": 13, "x/y": 14, "x.y": 15, "x-y": 16, "Z": 17, "z": 18, "10": 19, "9": 20}, true},
		// Left to yaml.v2.
		{"empty object", map[string]interface{}{}, false},
		{"newline", map[string]interface{}{"script": "echo a\necho b"}, false},
		{"quote", map[string]interface{}{"q": `say "hi"`}, false},
		{"long line with spaces", map[string]interface{}{"description": long}, false},
		{"colon space", map[string]interface{}{"m": "key: value"}, false},
		{"double space", map[string]interface{}{"m": "a  b"}, false},
		{"date", map[string]interface{}{"d": "2024-01-01"}, false},
		{"underscore number", map[string]interface{}{"u": "1_000"}, false},
		{"base 60", map[string]interface{}{"t": "1:20"}, false},
		{"binary", map[string]interface{}{"b": "0b101"}, false},
		{"sign", map[string]interface{}{"n": "-1"}, false},
		{"infinity", map[string]interface{}{"f": mathInf()}, false},
		{"non-ASCII key", map[string]interface{}{"clé": "v"}, false},
		{"unicode value", map[string]interface{}{"v": "café"}, false},
		{"long key", map[string]interface{}{strings.Repeat("k", 129): "v"}, false},
		{"other types", map[string]interface{}{"m": map[string]string{"a": "b"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agreesWithYAMLv2(t, tc.name, tc.content); got != tc.fast {
				t.Errorf("written by fastYAML: %v, want %v", got, tc.fast)
			}
		})
	}
}

func mathInf() float64 { return 1 / zero }

var zero = 0.0

// TestFastYAMLRandom holds fastYAML to yaml.v2 on random objects built of
// the strings, keys and shapes that decide yaml.v2's forms.
func TestFastYAMLRandom(t *testing.T) {
	keys := []string{"a", "b", "A", "Z", "z", "_", "a1", "a10", "a2", "a01", "a001", "a0", "0", "1", "10", "01", "9", "-", ".", "/",
		"app.kubernetes.io/name", "app.kubernetes.io/version", "helm.sh/chart", "x-y", "x_y", "x.y", "k8s", "k08s", "k8S", "on", "yes", "null", "true", "80",
		"containerPort", "spec", "metadata", "a:b", "(p)", "ab", "aB", "Ab", "a b", "é"}
	values := []interface{}{"", "a", "nginx", "nginx:1.25", "nginx:latest", "a:", "a: b", "a:b", "y", "yes", "no", "NO", "On", "off", "true", "False", "null", "NULL", "~",
		"0", "1", "12", "007", "08", "0x10", "0o7", "0b1", "1_000", "1e3", "1E3", "1.5", ".5", "5.", "-1", "+1", "1:20", "2024-01-01", "2024-1", "1.27.3", "1.27.3-alpine", "16-alpine", "25%", "100%", "a%b", "%", "1%2", "0%", "0x1%", "0b102", "99999999999999999999", "1e400", "1" + strings.Repeat("0", 400), "-c", "--port=80", "-1a", "---x", "--", "-", "_", "_a", "10Mi", "500m", "1.5Gi", "1E", "2e", "1Ei", "10mi",
		"/path/to/x", "(sensitive)", "(sensitive: hmac-sha256:0123456789abcdef)", "(sensitive: hmac-sha256:0123456789ABCDEF)", "a b", "a  b", " a", "a ", "a #b", "a#b", "-a", "- a", "?a", "a,b", "[a]", "{a}",
		"&a", "*a", "!a", "|a", ">a", "%a", "@a", "`a", "'a'", "\"a\"", "a\nb", "a\tb", "tab\t", "é", "---", "...", "=", "a=b", "x+y",
		strings.Repeat("w ", 30) + "end", strings.Repeat("w", 100), "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h",
		int64(0), int64(-5), int64(1) << 62, 1, 0.0, 3.0, 0.25, -1.5e-7, 1e21, 123456789.0, true, false, nil}
	r := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) interface{}
	value = func(depth int) interface{} {
		switch n := r.IntN(10); {
		case depth < 4 && n < 2:
			m := map[string]interface{}{}
			for range r.IntN(5) {
				m[keys[r.IntN(len(keys))]] = value(depth + 1)
			}
			return m
		case depth < 4 && n < 4:
			var s []interface{}
			for range r.IntN(4) {
				s = append(s, value(depth+1))
			}
			if s == nil {
				s = []interface{}{}
			}
			return s
		default:
			return values[r.IntN(len(values))]
		}
	}
	// One mapping of every key: yaml.v2 sorts more than 12 keys otherwise
	// than a few, and the order must not depend on how.
	all := map[string]interface{}{}
	for i, k := range keys {
		if _, ok := fastYAML(map[string]interface{}{k: int64(i)}); ok {
			all[k] = int64(i)
		}
	}
	if len(all) < 30 {
		t.Fatalf("only %d keys written alone", len(all))
	}
	for range 20 {
		if !agreesWithYAMLv2(t, "every key", map[string]interface{}{"m": all}) {
			t.Fatal("the mapping of every key was left to yaml.v2")
		}
	}
	fast := 0
	const objects = 20000
	for i := range objects {
		content := map[string]interface{}{}
		for range 1 + r.IntN(4) {
			content[keys[r.IntN(len(keys))]] = value(0)
		}
		if agreesWithYAMLv2(t, "random object", content) {
			fast++
		}
		if t.Failed() {
			t.Fatalf("object %d: %#v", i, content)
		}
	}
	// The table must reach the writer, or it proves nothing.
	if fast < objects/10 {
		t.Errorf("fastYAML wrote %d of %d random objects; want at least a tenth", fast, objects)
	}
}

// TestFastYAMLRepositoryObjects holds fastYAML to yaml.v2 on every object
// in the repository's test data, decoded as the planner decodes a
// manifest (numbers as float64) and a live object (integers as int64).
func TestFastYAMLRepositoryObjects(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, fast := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.Contains(path, "testdata") || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, doc := range strings.Split(string(raw), "\n---") {
			j, err := syaml.YAMLToJSON([]byte(doc))
			if err != nil {
				continue // a template, not YAML
			}
			var floats, ints map[string]interface{}
			if json.Unmarshal(j, &floats) != nil || floats == nil {
				continue
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &ints); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			docs++
			for _, content := range []map[string]interface{}{floats, ints} {
				if agreesWithYAMLv2(t, path+" document "+string(rune('0'+i)), content) {
					fast++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs < 25 || fast < docs {
		t.Errorf("%d documents, %d of their %d decodings written by fastYAML; want at least 25 documents and half written", docs, fast, 2*docs)
	}
}
