package planner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// TestPreviousSplitEarly: a plan given the last release's manifest split
// in the background (Input.PreviousSplit) is the plan made without it,
// whether the split is of that manifest (taken) or of another one, name or
// namespace (ignored), with documents repeated word for word, changed,
// added and removed, a second render, and a manifest that does not parse.
func TestPreviousSplitEarly(t *testing.T) {
	cm := "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: %s}\n"
	doc := func(name, value string) string {
		return strings.NewReplacer("{name: %s}", "{name: "+name+"}", "{k: %s}", "{k: "+value+"}").Replace(cm)
	}
	base := doc("same", "1") + doc("changed", "1") + doc("removed", "1") + pvc("data", "") + strings.Replace(secret, "%s", "old-password", 1)
	head := doc("same", "1") + doc("changed", "2") + doc("added", "1") + pvc("data", "") + strings.Replace(secret, "%s", "new-password", 1)
	tests := []struct {
		name              string
		base, head, again string
		split             string // the manifest split in the background
		splitName         string
		wantErr           string
	}{
		{name: "taken", base: base, head: head, split: base},
		{name: "taken, with a second render", base: base, head: head, again: head, split: base},
		{name: "another manifest: ignored", base: base, head: head, split: head},
		{name: "another name: ignored", base: base, head: head, split: base, splitName: "release \"other\" revision 1 manifest"},
		{name: "an install", base: "", head: head, split: ""},
		{name: "a last release that does not parse", base: base + "---\n# Source: app/templates/bad.yaml\nkind: [\n", head: head,
			split: base + "---\n# Source: app/templates/bad.yaml\nkind: [\n", wantErr: "bad.yaml"},
		{name: "neither the last release nor the render parses: the render named, as without the early split", base: base + "---\n# Source: app/templates/bad.yaml\nkind: [\n",
			head: head + "---\n# Source: app/templates/worse.yaml\nkind: [\n", split: base + "---\n# Source: app/templates/bad.yaml\nkind: [\n", wantErr: "worse.yaml"},
	}
	masker := redact.NewMasker()
	planWith := func(in Input) (string, error) {
		p := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "")
		p.Masker = masker
		got, err := p.Plan(context.Background(), in)
		if err != nil {
			return "", err
		}
		out, err := json.Marshal(got)
		return string(out), err
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Release: plan.Release{Name: "app", Namespace: "prod", CurrentRevision: 1},
				PreviousManifest: tt.base, NextManifest: tt.head, SecondRender: tt.again}
			want, wantErr := planWith(in)
			name := tt.splitName
			if name == "" {
				name = ReleaseManifestName("app", 1)
			}
			in.PreviousSplit = manifest.SplitInBackground(name, tt.split, "prod", manifest.StaticScoper{})
			got, err := planWith(in)
			if tt.wantErr != "" {
				if err == nil || wantErr == nil || err.Error() != wantErr.Error() || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("errors %v and %v, want the same naming %q", err, wantErr, tt.wantErr)
				}
				return
			}
			if err != nil || wantErr != nil {
				t.Fatalf("errors: %v, %v", err, wantErr)
			}
			if got != want {
				t.Errorf("plan with the early split:\n%s\nwithout:\n%s", got, want)
			}
		})
	}
}
