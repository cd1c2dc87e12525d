package helmdiff

import (
	"os"
	"path/filepath"
	"testing"
)

func TestServes(t *testing.T) {
	withDiff, without := t.TempDir(), t.TempDir()
	for dir, name := range map[string]string{filepath.Join(withDiff, "helm-diff"): "diff", filepath.Join(without, "safe-upgrade"): "safe-upgrade"} {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte("name: "+name+"\nversion: 3.15.0\n"), 0o644)
	}
	both := without + string(os.PathListSeparator) + withDiff
	for _, tt := range []struct {
		env, dirs string
		want      bool
		err       bool
	}{
		{"", without, true, false},
		{"", both, false, false},
		{"1", both, true, false},
		{"0", without, false, false},
		{"yes", without, false, true},
	} {
		got, err := Serves(tt.env, tt.dirs)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("Serves(%q, %q) = %v, %v; want %v (error %v)", tt.env, tt.dirs, got, err, tt.want, tt.err)
		}
	}
}
