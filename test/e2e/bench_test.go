package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"helm.sh/helm/v3/pkg/cli"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// benchChart writes a chart with n objects of mixed kinds; version bumps the
// helm.sh/chart label on every object, as a real chart bump does, so every
// object gets a patch (the worst case for the plan).
func benchChart(b *testing.B, dir string, n int, version string) string {
	b.Helper()
	var sb strings.Builder
	kinds := []func(i int) string{
		func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, labels: {helm.sh/chart: bench-%s}}\ndata: {key: value-%d}\n", i, version, i)
		},
		func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s-%d, labels: {helm.sh/chart: bench-%s}}\nstringData: {password: pw-%d}\n", i, version, i)
		},
		func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, labels: {helm.sh/chart: bench-%s}}\nspec: {selector: {app: a%d}, ports: [{port: 80}]}\n", i, version, i)
		},
		func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa-%d, labels: {helm.sh/chart: bench-%s}}\n", i, version)
		},
		func(i int) string {
			return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: d-%d, labels: {helm.sh/chart: bench-%s}}
spec:
  replicas: 0
  selector: {matchLabels: {app: d%d}}
  template:
    metadata: {labels: {app: d%d}}
    spec: {containers: [{name: c, image: "nginx:1.25"}]}
`, i, version, i, i)
		},
	}
	for i := 0; i < n; i++ {
		sb.WriteString("---\n" + kinds[i%len(kinds)](i))
	}
	chart := filepath.Join(dir, "bench-"+version)
	must(b, os.MkdirAll(filepath.Join(chart, "templates"), 0o755))
	must(b, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: bench\nversion: "+version+"\n"), 0o644))
	must(b, os.WriteFile(filepath.Join(chart, "templates", "all.yaml"), []byte(sb.String()), 0o644))
	return chart
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// benchRelease installs a 1000-object release once per benchmark.
func benchRelease(b *testing.B) (*testcluster.Cluster, string, string) {
	c := testcluster.Get(b)
	ns := c.Namespace(b)
	dir := b.TempDir()
	c.Helm(b, "install", "bench", benchChart(b, dir, 1000, "1.0.0"), "-n", ns, "--timeout", "10m")
	return c, ns, benchChart(b, dir, 1000, "2.0.0")
}

// BenchmarkPlan1000 times a whole plan (render, GETs, dry-run patches,
// classification, JSON report) of a 1000-object chart bump.
func BenchmarkPlan1000(b *testing.B) {
	c, ns, chart := benchRelease(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out, errOut strings.Builder
		code := runTo(c, &out, &errOut, "bench", chart, "-n", ns, "--dry-run", "-o", "json")
		if code != 0 {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
	b.StopTimer()
	reportMaxRSS(b)
}

// BenchmarkFloor1000 times the least any plan must do: render the chart
// in-process and GET every object in parallel.
func BenchmarkFloor1000(b *testing.B) {
	c, ns, chart := benchRelease(b)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &ns
	// No client-side throttling, as in the tool: the floor is the server's.
	restConfig := rest.CopyConfig(c.RESTConfig)
	restConfig.QPS = -1
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg, err := render.NewConfiguration(flags, ns, "", nil)
		must(b, err)
		res, err := render.Render(context.Background(), cfg, cli.New(), "bench", chart, render.Options{Namespace: ns})
		must(b, err)
		disco, err := discovery.NewDiscoveryClientForConfig(restConfig)
		must(b, err)
		groups, err := restmapper.GetAPIGroupResources(disco)
		must(b, err)
		dyn, err := dynamic.NewForConfig(restConfig)
		must(b, err)
		cluster := &live.Cluster{Dynamic: dyn, Mapper: restmapper.NewDiscoveryRESTMapper(groups)}
		set, err := manifest.Split("bench", res.Next.Manifest, ns, cluster)
		must(b, err)
		for id, st := range cluster.Fetch(context.Background(), set.Objects(), live.DefaultConcurrency) {
			if st.Err != nil || st.Obj == nil {
				b.Fatalf("%s: %v", id, st.Err)
			}
		}
	}
	b.StopTimer()
	reportMaxRSS(b)
}

func reportMaxRSS(b *testing.B) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}
