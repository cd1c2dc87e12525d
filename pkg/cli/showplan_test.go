package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// TestShowPlan: show-plan prints the saved report of the format asked, byte
// for byte, and who made the plan on stderr, with no cluster configured at
// all; another identity is refused with exit 1.
func TestShowPlan(t *testing.T) {
	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	reports := map[string]string{"text": "text report\n  without a final newline", "json": "{\"a\": 1}\n", "markdown": "# plan\n\n| a |\n"}
	p := &savedplan.Plan{ApplyFlags: map[string]interface{}{}, Objects: []savedplan.Object{}, MaskKey: []byte("k"), Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Reports: reports,
		PlannedBy: savedplan.Provenance{Tool: "helm-safe-upgrade/v1.2.3", Commit: "c0ffee", Pipeline: "77"},
		Cluster:   savedplan.ClusterIdentity{Server: "https://k8s.example:6443", Context: "prod"}}
	p.Release.Name, p.Release.Namespace = "app", "prod"
	path := filepath.Join(t.TempDir(), "plan.age")
	if err := savedplan.Write(path, p, savedplan.Keys{Recipients: []string{key.Recipient().String()}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "/no/kubeconfig")
	t.Setenv(savedplan.EnvIdentity, key.String())
	for _, format := range []string{"text", "json", "markdown"} {
		out, errOut, code := execute(t, "helm-safe-upgrade", "show-plan", path, "-o", format)
		if code != 0 || out != reports[format] {
			t.Fatalf("-o %s: exit %d, stdout %q, want %q\n%s", format, code, out, reports[format], errOut)
		}
		for _, want := range []string{"release prod/app", "helm-safe-upgrade/v1.2.3", "commit c0ffee", "pipeline 77", "https://k8s.example:6443"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errOut)
			}
		}
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(savedplan.EnvIdentity, other.String())
	out, errOut, code := execute(t, "helm-safe-upgrade", "show-plan", path)
	if code != 1 || out != "" || !strings.Contains(errOut, "not encrypted to the given identity") {
		t.Fatalf("another identity: exit %d, stdout %q\n%s", code, out, errOut)
	}
}
