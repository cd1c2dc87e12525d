package injection

import "testing"

func TestUnsafe(t *testing.T) {
	for _, c := range Corpus() {
		if Unsafe(c.Text) == "" {
			t.Errorf("%s: Unsafe finds nothing in %q", c.Name, c.Text)
		}
	}
	if bad := Unsafe("plain text, tab\t, é 日本 …[+3 bytes] \\x1b"); bad != "" {
		t.Errorf("Unsafe finds %s in plain text", bad)
	}
	if bad := UnsafeLines("one\ntwo\n"); bad != "" {
		t.Errorf("UnsafeLines finds %s in plain lines", bad)
	}
	if UnsafeLines("one\ntw\ro\n") == "" {
		t.Error("UnsafeLines finds no CR")
	}
}
