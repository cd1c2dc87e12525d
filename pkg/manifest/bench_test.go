package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSplit1000 splits 1000 ConfigMaps as Split does and as the
// planner's SplitRemembering does (lazily); -cpu 1,2 shows the documents
// parsed on both cores.
func BenchmarkSplit1000(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: value-%d\n", i, i)
	}
	manifest := sb.String()
	for _, bm := range []struct {
		name  string
		split func() error
	}{
		{"Split", func() error { _, err := Split("bench", manifest, "default", StaticScoper{}); return err }},
		{"SplitRemembering", func() error {
			_, _, err := SplitRemembering("bench", manifest, "default", StaticScoper{})
			return err
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bm.split(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
