package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
)

// BenchRunsEnv sets how many times BenchmarkUpgrade runs each contender; it
// reports the medians (default 3).
const BenchRunsEnv = "BENCH_RUNS"

// BenchToolEnv names a tool binary to measure instead of building this
// tree's (e.g. one built from main, to compare).
const BenchToolEnv = "BENCH_TOOL"

// benchShape is one upgrade BenchmarkUpgrade measures: a release of objects
// objects (ConfigMap, Secret, Service, Deployment in equal parts) upgraded
// with changed of them changed in content, or, with bump, a label changed on
// every object as a chart version bump does.
type benchShape struct {
	name             string
	objects, changed int
	bump             bool
}

func benchShapes() []benchShape {
	return []benchShape{
		{name: "1000-objects/150-changed", objects: 1000, changed: 150},
		{name: "1000-objects/all-changed", objects: 1000, bump: true},
		{name: "5000-objects/750-changed", objects: 5000, changed: 750},
	}
}

// benchTemplate renders .Values.objects objects: object i is of kind i mod 4,
// and the first .Values.changed of them differ from the installed release in
// content (data, port, image); .Values.label is on every object.
const benchTemplate = `{{- range $i, $_ := until (int .Values.objects) }}
{{- $kind := mod $i 4 }}
{{- $changed := lt $i (int $.Values.changed) }}
---
{{- if eq $kind 0 }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ $i }}
  labels: {app.kubernetes.io/version: "{{ $.Values.label }}"}
data:
  key: value-{{ $i }}{{ if $changed }}-changed{{ end }}
{{- else if eq $kind 1 }}
apiVersion: v1
kind: Secret
metadata:
  name: s-{{ $i }}
  labels: {app.kubernetes.io/version: "{{ $.Values.label }}"}
stringData:
  password: pw-{{ $i }}{{ if $changed }}-changed{{ end }}
{{- else if eq $kind 2 }}
apiVersion: v1
kind: Service
metadata:
  name: svc-{{ $i }}
  labels: {app.kubernetes.io/version: "{{ $.Values.label }}"}
spec:
  selector: {app: a{{ $i }}}
  ports: [{port: {{ if $changed }}8080{{ else }}80{{ end }}}]
{{- else }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d-{{ $i }}
  labels: {app.kubernetes.io/version: "{{ $.Values.label }}"}
spec:
  replicas: 0
  selector: {matchLabels: {app: d{{ $i }}}}
  template:
    metadata: {labels: {app: d{{ $i }}}}
    spec: {containers: [{name: c, image: "nginx:{{ if $changed }}1.26{{ else }}1.25{{ end }}"}]}
{{- end }}
{{- end }}
`

// writeBenchChart writes the chart every shape renders (sizes and changes
// come from --set) and returns its directory.
func writeBenchChart(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "bench")
	must(b, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
	must(b, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: bench\nversion: 1.0.0\n"), 0o644))
	must(b, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("objects: 1000\nchanged: 0\nlabel: \"1\"\n"), 0o644))
	must(b, os.WriteFile(filepath.Join(dir, "templates", "all.yaml"), []byte(benchTemplate), 0o644))
	return dir
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// sample is one whole-process measurement: wall time and the peak resident
// set of the process (of the largest, for several processes in a row).
type sample struct {
	wall time.Duration
	cpu  time.Duration // user + system
	rss  int64         // bytes
}

// then is s followed by next: times add up, the peak is the larger.
func (s sample) then(next sample) sample {
	return sample{wall: s.wall + next.wall, cpu: s.cpu + next.cpu, rss: max(s.rss, next.rss)}
}

// execMeasured runs name with args and env, stdout discarded, and returns its
// wall time and peak RSS (wait4's rusage of the child). It has no time limit
// of its own (a fixed one is hit by a slower machine): go test -timeout
// bounds a benchmark.
func execMeasured(env []string, name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return sample{}, fmt.Errorf("%s: no rusage", name)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return sample{wall: wall, cpu: cpu, rss: ru.Maxrss * 1024}, nil // Linux: KiB
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// measure runs one contender runs times and reports the median wall time as
// ns/op, the median CPU time (user + system) as CPU-ms and the median peak
// RSS as peak-RSS-MiB. On a shared machine the CPU time is the steadier
// figure: wall time includes waiting for a core.
func measure(b *testing.B, runs int, one func() (sample, error)) {
	b.Helper()
	var walls, cpus []time.Duration
	var rsss []int64
	for range runs {
		s, err := one()
		must(b, err)
		walls = append(walls, s.wall)
		cpus = append(cpus, s.cpu)
		rsss = append(rsss, s.rss)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(rsss)
	b.ReportMetric(float64(walls[len(walls)/2].Nanoseconds()), "ns/op")
	b.ReportMetric(float64(cpus[len(cpus)/2].Microseconds())/1000, "CPU-ms")
	b.ReportMetric(float64(rsss[len(rsss)/2])/(1<<20), "peak-RSS-MiB")
}

// benchRuns is how many times a benchmark runs each contender (BenchRunsEnv).
func benchRuns(b *testing.B) int {
	s := os.Getenv(BenchRunsEnv)
	if s == "" {
		return 3
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", BenchRunsEnv, s)
	}
	return n
}

// benchTool returns the tool binary to measure: BenchToolEnv's, else this
// tree's, built.
func benchTool(b *testing.B, c *testcluster.Cluster) string {
	if tool := os.Getenv(BenchToolEnv); tool != "" {
		return tool
	}
	tool := filepath.Join(b.TempDir(), "helm-safe-upgrade")
	build := exec.Command("go", "build", "-o", tool, "./cmd/helm-safe-upgrade")
	build.Dir = c.Root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the tool: %v\n%s", err, out)
	}
	return tool
}

// BenchmarkUpgrade measures, for each shape, three whole processes as a user
// runs them: the tool's plan (the binary built from this tree, --dry-run -o
// json), `helm upgrade --dry-run=server` (the peer a user has with Helm
// alone) and the floor any plan has to pay: `helm template` plus one LIST
// (kubectl get -o json) of the objects' kinds. Each reports the median wall
// time (ns/op) and peak RSS of BENCH_RUNS runs; scripts/bench.sh turns them
// into a table with ratios to the floor and the tool's slope between 1000
// and 5000 objects. Run it with -benchtime 1x: each contender repeats itself.
func BenchmarkUpgrade(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	env := c.Env()
	chart := writeBenchChart(b)
	tool := benchTool(b, c)
	// One release per size, installed when a shape first needs it and shared
	// by the shapes of that size (each plans against it; none writes).
	namespaces := map[int]string{}
	release := func(objects int) string {
		if ns, ok := namespaces[objects]; ok {
			return ns
		}
		ns := c.Namespace(b)
		_, err := execMeasured(env, c.Helm3, "install", "bench", chart, "-n", ns, "--timeout", "15m",
			"--set", fmt.Sprintf("objects=%d", objects))
		must(b, err)
		namespaces[objects] = ns
		return ns
	}
	for _, shape := range benchShapes() {
		b.Run(shape.name, func(b *testing.B) {
			ns := release(shape.objects)
			label := "1"
			if shape.bump {
				label = "2"
			}
			set := fmt.Sprintf("objects=%d,changed=%d,label=%s", shape.objects, shape.changed, label)
			b.Run("tool", func(b *testing.B) {
				measure(b, runs, func() (sample, error) {
					return execMeasured(env, tool, "bench", chart, "-n", ns, "--set", set, "--dry-run", "-o", "json")
				})
			})
			b.Run("helm-dry-run-server", func(b *testing.B) {
				measure(b, runs, func() (sample, error) {
					return execMeasured(env, c.Helm3, "upgrade", "bench", chart, "-n", ns, "--set", set, "--dry-run=server")
				})
			})
			b.Run("floor", func(b *testing.B) {
				measure(b, runs, func() (sample, error) {
					render, err := execMeasured(env, c.Helm3, "template", "bench", chart, "-n", ns, "--set", set)
					if err != nil {
						return sample{}, err
					}
					list, err := execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-n", ns, "-o", "json")
					return render.then(list), err
				})
			})
		})
	}
}
