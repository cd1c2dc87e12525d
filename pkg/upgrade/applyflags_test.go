package upgrade

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestApplyFlags: --force-replace (Helm 4) and --force (Helm 3) both ask
// for Force; neither is on by default.
func TestApplyFlags(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--force-replace"}, true},
		{[]string{"--force"}, true},
		{[]string{"--force-replace=false"}, false},
	}
	for _, tt := range tests {
		var r ApplyRequest
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		r.AddFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if r.Force != tt.want {
			t.Errorf("%v: Force %v, want %v", tt.args, r.Force, tt.want)
		}
	}
}
