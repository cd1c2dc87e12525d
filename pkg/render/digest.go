package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"helm.sh/helm/v3/pkg/chart"
)

// ChartDigest hashes every file of a chart and its subcharts, so a saved
// plan can tell whether the chart changed since.
func ChartDigest(ch *chart.Chart) string {
	h := sha256.New()
	writeChart(h, ch)
	return hex.EncodeToString(h.Sum(nil))
}

func writeChart(w io.Writer, ch *chart.Chart) {
	files := append([]*chart.File{}, ch.Raw...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	fmt.Fprintf(w, "chart %s\n", ch.ChartFullPath())
	for _, f := range files {
		fmt.Fprintf(w, "%s %d\n", f.Name, len(f.Data))
		_, _ = w.Write(f.Data)
	}
	for _, dep := range ch.Dependencies() {
		writeChart(w, dep)
	}
}

// ValuesDigest hashes the user-supplied values and the flags that decide how
// Helm combines them with the release's.
func ValuesDigest(values map[string]interface{}, opts Options) string {
	data, _ := json.Marshal(struct {
		Values                                      map[string]interface{}
		ReuseValues, ResetValues, ResetThenReuseVal bool
	}{values, opts.ReuseValues, opts.ResetValues, opts.ResetThenReuseValues})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
