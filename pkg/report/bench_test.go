package report

import (
	"io"
	"testing"
)

func benchmarkWrite(b *testing.B, opts Options) {
	p := bigPlan(1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, p, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteText writes a 1000-change plan as text.
func BenchmarkWriteText(b *testing.B) { benchmarkWrite(b, Options{Format: FormatText}) }

// BenchmarkWriteJSON writes a 1000-change plan as JSON.
func BenchmarkWriteJSON(b *testing.B) { benchmarkWrite(b, Options{Format: FormatJSON}) }

// BenchmarkWriteMarkdown writes a 1000-change plan as Markdown, truncated
// to the default comment size.
func BenchmarkWriteMarkdown(b *testing.B) { benchmarkWrite(b, Options{Format: FormatMarkdown}) }
