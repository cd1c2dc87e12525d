package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// statusFixture is a status of two releases: one with an object of each
// state and its health, one in sync.
func statusFixture() *plan.Status {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return &plan.Status{ServerVersion: "v1.37.2", Releases: []plan.ReleaseStatus{{
		Name: "shop", Namespace: "shop", Revision: 4, Last: 5, HelmStatus: "failed", Chart: "shop-2.0.0", AppVersion: "2.0",
		ApplyMethod: plan.ApplyMethodCSA, Updated: at,
		Health: []string{"Helm status of revision 5 is failed: upgrade failed (compared with revision 4, the last deployed one)",
			`Deployment.apps/shop/web not ready: in-progress: 1/3 updated — pod web-1: image "nginx:1.28|x" cannot be pulled`},
		Objects: []plan.ObjectStatus{
			{ID: id("", "ConfigMap", "flags"), APIVersion: "v1", State: plan.StateDrifted, Next: "invalid",
				Drift: []plan.FieldDrift{{Path: "data.mode", Stored: "fast", Live: "slow", Manager: "kubectl-edit", Operation: "Update", Time: at}},
				Reasons: []plan.Reason{{Path: "data.mode", Manager: "kubectl-edit", Source: plan.SourceServer,
					Message: `conflict with field manager "kubectl-edit": Helm 4's server-side apply fails here; with --force-conflicts it takes the field from "kubectl-edit" and the update is in-place`}}},
			{ID: id("", "ConfigMap", "settings"), APIVersion: "v1", State: plan.StateMissing, Next: "create"},
			{ID: id("apps", "Deployment", "web"), APIVersion: "apps/v1", State: plan.StateDrifted, Next: "rolling",
				Drift: []plan.FieldDrift{{Path: "spec.template.spec.containers[0].image", Stored: "nginx:1.27", Live: "nginx:1.28",
					Manager: "kubectl-edit", Operation: "Update", Time: at, Reverted: true}},
				Reasons: []plan.Reason{{Path: "spec.template.spec.containers[0].image", Message: "pod template changed", Source: plan.SourceDerived}},
				Rollout: &plan.Rollout{Replicas: 3, Strategy: "RollingUpdate", Impact: "3 pod(s) replaced gradually (maxUnavailable 25%, maxSurge 25%)"}},
			{ID: id("", "Secret", "db"), APIVersion: "v1", State: plan.StateDrifted, Next: "in-place",
				Drift: []plan.FieldDrift{{Path: "data.password", Stored: "(masked:1a2b3c)", Live: "(masked:4d5e6f)", Manager: "kubectl-edit", Operation: "Update", Time: at, Reverted: true}}},
			{ID: id("", "Service", "api"), APIVersion: "v1", State: plan.StateInSync},
			{ID: id("", "Service", "stray"), APIVersion: "v1", State: plan.StateExtra,
				Notes: []string{"not in revision 4's manifest, but its annotation meta.helm.sh/release-name names the release: Helm neither upgrades nor deletes it"}},
		},
	}, {
		Name: "db", Namespace: "data", Revision: 2, Last: 2, HelmStatus: "deployed", Chart: "db-1.0.0", ApplyMethod: plan.ApplyMethodSSA,
		Objects: []plan.ObjectStatus{{ID: id("apps", "StatefulSet", "db"), APIVersion: "apps/v1", State: plan.StateInSync}},
	}}}
}

// TestStatusFormats: every format of status, as golden files.
func TestStatusFormats(t *testing.T) {
	for _, tt := range []struct{ format, file string }{
		{FormatText, "status.txt"}, {FormatJSON, "status.json"}, {FormatMarkdown, "status.md"}, {FormatSARIF, "status.sarif"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteStatus(&b, statusFixture(), tt.format); err != nil {
				t.Fatal(err)
			}
			assertGolden(t, tt.file, b.Bytes())
		})
	}
}

// TestStatusJSONContract: the document's version and kind, and its
// summary, which CI reads.
func TestStatusJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := WriteStatus(&b, statusFixture(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		APIVersion, Kind string
		Summary          map[string]int
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"releases": 2, "inSync": 2, "drifted": 3, "missing": 1, "extra": 1}
	if doc.APIVersion != plan.APIVersion || doc.Kind != StatusKind {
		t.Errorf("apiVersion %q kind %q, want %q %q", doc.APIVersion, doc.Kind, plan.APIVersion, StatusKind)
	}
	for k, v := range want {
		if doc.Summary[k] != v {
			t.Errorf("summary %v, want %v", doc.Summary, want)
			break
		}
	}
}

// TestStatusOutOfSync: --detailed-exitcode's 3 is for drift and missing
// objects; extras and health alone do not set it.
func TestStatusOutOfSync(t *testing.T) {
	for _, tt := range []struct {
		name  string
		state plan.ObjectState
		want  bool
	}{
		{"in sync", plan.StateInSync, false},
		{"extra", plan.StateExtra, false},
		{"drifted", plan.StateDrifted, true},
		{"missing", plan.StateMissing, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &plan.Status{Releases: []plan.ReleaseStatus{{Health: []string{"not ready"},
				Objects: []plan.ObjectStatus{{ID: id("", "ConfigMap", "a"), State: tt.state}}}}}
			if got := st.OutOfSync(); got != tt.want {
				t.Errorf("OutOfSync() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStatusUnknownFormat: a format status does not write is an error
// naming it.
func TestStatusUnknownFormat(t *testing.T) {
	err := WriteStatus(&bytes.Buffer{}, statusFixture(), "yaml")
	if err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("err %v, want one naming yaml", err)
	}
}
