package verb

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

// TestChartRef: a release record without its chart (written by someone who
// may write Secrets) is named, never dereferenced.
func TestChartRef(t *testing.T) {
	for _, tt := range []struct {
		ch   *chart.Chart
		want string
	}{
		{&chart.Chart{Metadata: &chart.Metadata{Name: "db", Version: "1.2.3"}}, "db-1.2.3"},
		{&chart.Chart{}, "(no chart recorded)"},
		{nil, "(no chart recorded)"},
	} {
		if got := chartRef(tt.ch); got != tt.want {
			t.Errorf("chartRef(%+v) = %q, want %q", tt.ch, got, tt.want)
		}
	}
}
