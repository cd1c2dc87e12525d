package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// jsonUninstalled is the JSON document's uninstalled (docs/json-schema.md).
type jsonUninstalled struct {
	OK      bool `json:"ok"`
	Deleted []struct {
		Kind, Namespace, Name string
	} `json:"deleted"`
	Remaining []struct {
		Kind, Namespace, Name, Why string
		Finalizers                 []string
	} `json:"remaining"`
	LeftBehind []string `json:"leftBehind"`
}

// checkUninstalledJSON decodes the JSON document of an applied uninstall
// that left remaining (KIND/NS/NAME) held by finalizer, and checks that it
// names deleted as gone, remaining with its finalizer, and left among
// what stays (a prefix of a leftBehind line).
func checkUninstalledJSON(t *testing.T, stdout, deleted, remaining, finalizer, left string) {
	t.Helper()
	var doc struct {
		Uninstalled *jsonUninstalled `json:"uninstalled"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Uninstalled == nil {
		t.Fatalf("the JSON document after the uninstall: %v, uninstalled %v\n%s", err, doc.Uninstalled, stdout)
	}
	u := doc.Uninstalled
	if u.OK {
		t.Errorf("uninstalled.ok is true with %s still there", remaining)
	}
	var gone, still []string
	for _, d := range u.Deleted {
		gone = append(gone, d.Kind+"/"+d.Namespace+"/"+d.Name)
	}
	for _, r := range u.Remaining {
		if slices.Contains(r.Finalizers, finalizer) && strings.HasPrefix(r.Why, "Terminating since") {
			still = append(still, r.Kind+"/"+r.Namespace+"/"+r.Name)
		}
	}
	if !slices.Contains(gone, deleted) {
		t.Errorf("uninstalled.deleted %v does not name %s", gone, deleted)
	}
	if !slices.Contains(still, remaining) {
		t.Errorf("uninstalled.remaining %+v does not name %s held by %s", u.Remaining, remaining, finalizer)
	}
	if !slices.ContainsFunc(u.LeftBehind, func(l string) bool { return strings.HasPrefix(l, left) }) {
		t.Errorf("uninstalled.leftBehind %q does not name %s", u.LeftBehind, left)
	}
}
