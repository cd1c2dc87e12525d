package manifest

import (
	"fmt"
	"strings"
	"testing"
)

func BenchmarkSplit1000(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: value-%d\n", i, i)
	}
	manifest := sb.String()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Split("bench", manifest, "default", StaticScoper{}); err != nil {
			b.Fatal(err)
		}
	}
}
