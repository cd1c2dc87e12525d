package releasestate

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// bomb is a release record of about 1 MiB (what a Secret holds) that
// inflates to about 760 MiB: valid gzip of a JSON release whose manifest
// is one long run of a letter.
var bomb = sync.OnceValue(func() []byte {
	return gzipBomb(760 << 20)
})

// gzipBomb is base64(gzip({"name":"bomb","version":1,"manifest":"aaa…"}))
// of about n bytes decompressed.
func gzipBomb(n int) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	io.WriteString(w, `{"name":"bomb","version":1,"info":{"status":"deployed"},"manifest":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < n>>20; i++ {
		w.Write(chunk)
	}
	io.WriteString(w, `"}`)
	w.Close()
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

func encoded(t *testing.T, json string, compress bool) []byte {
	t.Helper()
	return []byte(encodeRecord(t, json, compress))
}

func TestDecodeRelease(t *testing.T) {
	good := `{"name":"r","version":3,"info":{"status":"deployed","description":"ok"},"manifest":"kind: ConfigMap","apply_method":"ssa"}`
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" decodes; else in the error
	}{
		{"gzip", encoded(t, good, true), ""},
		{"plain, before Helm compressed", encoded(t, good, false), ""},
		{"over the bound after gzip (a bomb)", gzipBomb(300 << 20), "decompresses to more than the limit of 256 MiB for a release record"},
		{"just under the first pass", gzipBomb(3 << 20), ""},
		{"over the first pass, under the bound", gzipBomb(5 << 20), ""},
		{"not base64", []byte("%%%%"), "not base64"},
		{"not gzip", []byte(base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 0x08, 0, 1, 2, 3, 4, 5, 6, 7})), "not gzip"},
		{"truncated gzip", encoded(t, good, true)[:40], "not "},
		{"not JSON", encoded(t, "not json at all", true), "not JSON"},
		{"trailing garbage", encoded(t, good+" {}", true), "not JSON"},
		{"revision too large", encoded(t, `{"name":"r","version":99999999999999999999}`, true), "wrong type: a JSON number in Release.version, where a int is expected"},
		{"wrong type", encoded(t, `{"name":"r","info":"deployed"}`, true), "wrong type: a JSON string in Release.info"},
		{"not an object", encoded(t, `[1,2]`, true), "wrong type: a JSON array in the top level"},
		{"over the bound in base64", bytes.Repeat([]byte("QUFB"), (RecordMax/3)+8), "over the limit of 256 MiB for a release record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := DecodeRelease(tc.data)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if rel.Name == "" {
					t.Fatalf("decoded no release")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "99999") {
				t.Fatalf("the error quotes the record: %v", err)
			}
		})
	}
}

// TestDecodeBombMemory measures what decoding the 1 MiB gzip bomb
// allocates: the whole allocation, not a time, and far under what the
// record claims (760 MiB) or the bound (256 MiB).
func TestDecodeBombMemory(t *testing.T) {
	data := bomb()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeRelease(data)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 256 MiB") {
		t.Fatalf("error %v, want the bound", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Fatalf("decoding a %d-byte bomb allocated %d MiB, want at most 32 MiB", len(data), got>>20)
	}
}

func BenchmarkDecodeBomb(b *testing.B) {
	data := bomb()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRelease(data); err == nil {
			b.Fatal("no error")
		}
	}
}

func TestUnreadables(t *testing.T) {
	one := &UnreadableError{Key: "sh.helm.release.v1.r.v2", Namespace: "ns", Revision: 2, Why: "not JSON (at byte 1)"}
	many := &UnreadableRecordsError{Records: []*UnreadableError{one, one}}
	for _, err := range []error{one, many} {
		if !errors.Is(err, ErrUnreadable) {
			t.Errorf("%v is not ErrUnreadable", err)
		}
		if len(Unreadables(err)) == 0 {
			t.Errorf("Unreadables(%v) is empty", err)
		}
	}
	if got := one.Error(); got != "release record sh.helm.release.v1.r.v2 in namespace ns is unreadable: not JSON (at byte 1)" {
		t.Errorf("message %q", got)
	}
}

// TestDecodeValueBomb: a record whose JSON is small but holds millions of
// values (each decoded costs tens of bytes where its JSON takes two) is
// refused before it is decoded.
func TestDecodeValueBomb(t *testing.T) {
	json := `{"name":"r","version":1,"config":{"a":[` + strings.Repeat("0,", 5<<20) + `0]}}`
	data := encoded(t, json, true)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeRelease(data)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "holds more than 4194304 JSON values") {
		t.Fatalf("error %v, want the value bound", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("refusing it allocated %d MiB: it was decoded", got>>20)
	}
	// 6 values; each opening counts one more, as if it held one: a bound.
	if n := jsonValues([]byte(`{"a":"x,[{\"","b":[1,2,{}]}`)); n != 7 {
		t.Errorf("jsonValues counted %d, want 7 (what strings hold is no value)", n)
	}
}

// BenchmarkDecodeRecord compares the bounded reader with Helm's own decode
// (base64, gzip, JSON, each unbounded) on a record of about 150 KiB of JSON
// (2000 ConfigMaps): on a shared 2-core machine, 5.8 ms against 7.3 ms;
// the bound costs a scan of the JSON for its values, and nothing more.
func BenchmarkDecodeRecord(b *testing.B) {
	var manifest strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: value-%d\n", i, i)
	}
	rel := map[string]any{"name": "app", "version": 3, "info": map[string]any{"status": "deployed"}, "manifest": manifest.String(),
		"config": map[string]any{"replicas": 3, "image": map[string]any{"tag": "1.2.3"}}}
	raw, _ := json.Marshal(rel)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(raw)
	w.Close()
	data := []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
	b.Run("bounded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRelease(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			z, _ := base64.StdEncoding.DecodeString(string(data))
			r, _ := gzip.NewReader(bytes.NewReader(z))
			j, _ := io.ReadAll(r)
			var rec StoredRelease
			if err := json.Unmarshal(j, &rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
