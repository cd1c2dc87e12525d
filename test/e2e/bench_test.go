package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
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
// content (data, port, image; with .Values.inPlace a Deployment's
// minReadySeconds instead of its image, so that no change rolls pods);
// .Values.label is on every object.
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
  {{- if and $changed $.Values.inPlace }}
  minReadySeconds: 5
  {{- end }}
  selector: {matchLabels: {app: d{{ $i }}}}
  template:
    metadata: {labels: {app: d{{ $i }}}}
    spec: {containers: [{name: c, image: "nginx:{{ if and $changed (not $.Values.inPlace) }}1.26{{ else }}1.25{{ end }}"}]}
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
	must(b, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("objects: 1000\nchanged: 0\ninPlace: false\nlabel: \"1\"\n"), 0o644))
	must(b, os.WriteFile(filepath.Join(dir, "templates", "all.yaml"), []byte(benchTemplate), 0o644))
	return dir
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// sample is one whole-process measurement: wall time, CPU time (user and
// system) and the peak resident set of the process (of the largest, for
// several processes in a row).
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
	return execMeasuredIn("", env, name, args...)
}

// execMeasuredIn is execMeasured in the working directory dir ("" for this
// process's).
func execMeasuredIn(dir string, env []string, name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
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

// report reports the medians of samples: the wall time as ns/op, the CPU
// time (user + system) as CPU-s and the peak RSS as peak-RSS-MiB. On a
// shared machine the CPU time is the steadier figure: wall time includes
// waiting for a core.
func report(b *testing.B, samples []sample) {
	b.Helper()
	var walls, cpus []time.Duration
	var rsss []int64
	for _, s := range samples {
		walls = append(walls, s.wall)
		cpus = append(cpus, s.cpu)
		rsss = append(rsss, s.rss)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(rsss)
	b.ReportMetric(float64(walls[len(walls)/2].Nanoseconds()), "ns/op")
	b.ReportMetric(cpus[len(cpus)/2].Seconds(), "CPU-s")
	b.ReportMetric(float64(rsss[len(rsss)/2])/(1<<20), "peak-RSS-MiB")
}

// dryRunsLine is the count of dry-run requests on the tool's --debug stage
// line (planner.Stats).
var dryRunsLine = regexp.MustCompile(`(\d+) dry-run request\(s\)`)

// reportDryRuns runs the tool's plan once more, with --debug and
// unmeasured, and reports its dry-run requests as dry-runs.
func reportDryRuns(b *testing.B, env []string, tool string, args ...string) {
	b.Helper()
	cmd := exec.Command(tool, append(args, "--debug")...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(b, cmd.Run())
	m := dryRunsLine.FindStringSubmatch(stderr.String())
	if m == nil {
		b.Fatalf("no dry-run count in the --debug output:\n%s", lastLines(stderr.String(), 20))
	}
	n, err := strconv.Atoi(m[1])
	must(b, err)
	b.ReportMetric(float64(n), "dry-runs")
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

// BenchmarkUpgrade measures, for each shape, whole processes as a user
// runs them: the tool's plan (the binary built from this tree, --dry-run -o
// json) of a release Helm 3 installed and of the same release Helm 4
// installed (server-side apply), with the dry-run requests each sent,
// `helm upgrade --dry-run=server` (the peer a user has with Helm
// alone) and the floor any plan has to pay: `helm template` plus one LIST
// (kubectl get -o json) of the objects' kinds. Each reports the median wall
// time (ns/op) and peak RSS of BENCH_RUNS runs; scripts/bench.sh turns them
// into a table with ratios to the floor and the tool's slope between 1000
// and 5000 objects. The contenders of a shape run in turns, round after
// round (tool, tool-helm4, floor, helm-dry-run-server; benchInterleaved), so
// that a load that comes and goes on a shared machine weighs on each alike;
// the dry-run requests are counted after all rounds. Run it with -benchtime
// 1x: each contender repeats itself.
func BenchmarkUpgrade(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	env := c.Env()
	chart := writeBenchChart(b)
	tool := benchTool(b, c)
	// One release per size and Helm major, installed when a shape first
	// needs it and shared by the shapes of that size (each plans against
	// it; none writes). Helm 4 installs with server-side apply.
	type releaseKey struct {
		objects int
		helm    string
	}
	namespaces := map[releaseKey]string{}
	release := func(objects int, helm string) string {
		key := releaseKey{objects, helm}
		if ns, ok := namespaces[key]; ok {
			return ns
		}
		ns := c.Namespace(b)
		_, err := execMeasured(env, helm, "install", "bench", chart, "-n", ns, "--timeout", "15m",
			"--set", fmt.Sprintf("objects=%d", objects))
		must(b, err)
		namespaces[key] = ns
		return ns
	}
	for _, shape := range benchShapes() {
		b.Run(shape.name, func(b *testing.B) {
			ns := release(shape.objects, c.Helm3)
			label := "1"
			if shape.bump {
				label = "2"
			}
			set := fmt.Sprintf("objects=%d,changed=%d,label=%s", shape.objects, shape.changed, label)
			plan := []string{"bench", chart, "--set", set, "--dry-run", "-o", "json"}
			args3 := append([]string{"-n", ns}, plan...)
			// The same plan of the same release installed by Helm 4,
			// installed before anything is timed: timing a plan just
			// after its install (the controllers still settling it)
			// would skew the ratio.
			args4 := append([]string{"-n", release(shape.objects, c.Helm4)}, plan...)
			benchInterleaved(b, runs, []contender{
				{name: "tool", run: func() (sample, error) { return execMeasured(env, tool, args3...) },
					after: func(b *testing.B) { reportDryRuns(b, env, tool, args3...) }},
				{name: "tool-helm4", run: func() (sample, error) { return execMeasured(env, tool, args4...) },
					after: func(b *testing.B) { reportDryRuns(b, env, tool, args4...) }},
				{name: "floor", run: func() (sample, error) {
					render, err := execMeasured(env, c.Helm3, "template", "bench", chart, "-n", ns, "--set", set)
					if err != nil {
						return sample{}, err
					}
					list, err := execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-n", ns, "-o", "json")
					return render.then(list), err
				}},
				{name: "helm-dry-run-server", run: func() (sample, error) {
					return execMeasured(env, c.Helm3, "upgrade", "bench", chart, "-n", ns, "--set", set, "--dry-run=server")
				}},
			})
		})
	}
}

// BenchmarkWatch measures what the rollout watch costs once Helm returned:
// a 1000-object release whose 150 changes are all in-place (nothing rolls,
// so the watch's own cost is all there is), applied by the tool built from
// this tree. Each run applies the changes (then helm puts the release back,
// unmeasured) and reads the tool's debug line of the watch stage: the time
// the watch took after Helm returned (watch-ms), its requests
// (watch-requests), and the most LISTs and WATCHes it sent for one resource
// (max-LIST/kind, max-WATCH/kind; the snapshot's LIST of pods before the
// apply included), and the whole tool process's wall time and CPU time
// (tool-s, tool-CPU-s: the watch's own CPU is not measured apart). Medians
// of BENCH_RUNS runs; the per-resource line of the last run is logged.
func BenchmarkWatch(b *testing.B) {
	runs, c, env, chart, tool, ns := benchSetup(b)
	base := []string{"bench", chart, "-n", ns, "--timeout", "15m", "--set", "objects=1000"}
	_, err := execMeasured(env, c.Helm3, append([]string{"install"}, base...)...)
	must(b, err)
	b.Run("1000-objects/150-in-place", func(b *testing.B) {
		var ms, reqs, lists, watches, wall, cpu []float64
		var perKind string
		for range runs {
			cmd := exec.Command(tool, "bench", chart, "-n", ns, "--set", "objects=1000,changed=150,inPlace=true", "--debug")
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("the tool: %v\n%s", err, lastLines(stderr.String(), 20))
			}
			wall = append(wall, time.Since(start).Seconds())
			cpu = append(cpu, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
			m := watchStage.FindStringSubmatch(stderr.String())
			if m == nil {
				b.Fatalf("no watch stage in the tool's debug output:\n%s", lastLines(stderr.String(), 30))
			}
			took, err := time.ParseDuration(m[1])
			must(b, err)
			n, _ := strconv.Atoi(m[2])
			l, w := maxPerKind(m[3])
			ms, reqs, lists, watches = append(ms, float64(took.Milliseconds())), append(reqs, float64(n)), append(lists, l), append(watches, w)
			perKind = m[3]
			_, err = execMeasured(env, c.Helm3, append([]string{"upgrade"}, base...)...) // back to no change
			must(b, err)
		}
		b.Logf("watch requests per resource (last run): %s", perKind)
		b.ReportMetric(median(ms), "watch-ms")
		b.ReportMetric(median(reqs), "watch-requests")
		b.ReportMetric(median(lists), "max-LIST/kind")
		b.ReportMetric(median(watches), "max-WATCH/kind")
		b.ReportMetric(median(wall), "tool-s")
		b.ReportMetric(median(cpu), "tool-CPU-s")
	})
}

// watchStage is the tool's debug line of the watch stage (pkg/verb).
var watchStage = regexp.MustCompile(`debug: stage watch: (\S+), (\d+) request\(s\); (.*)`)

// maxPerKind is the most LISTs and WATCHes of one resource in a
// watch.Requests line.
func maxPerKind(line string) (lists, watches float64) {
	for _, m := range perKindCount.FindAllStringSubmatch(line, -1) {
		l, _ := strconv.Atoi(m[1])
		w, _ := strconv.Atoi(m[2])
		lists, watches = max(lists, float64(l)), max(watches, float64(w))
	}
	return lists, watches
}

var perKindCount = regexp.MustCompile(`(\d+) LIST \+ (\d+) WATCH`)

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
