package report

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// jsonUninstalled is what an applied uninstall left, read back from the
// cluster (docs/json-schema.md#uninstalled).
type jsonUninstalled struct {
	OK         bool            `json:"ok"`
	HelmError  string          `json:"helmError,omitempty"`
	Deleted    []jsonObjectRef `json:"deleted"`
	Remaining  []jsonRemaining `json:"remaining"`
	LeftBehind []string        `json:"leftBehind"`
}

type jsonObjectRef struct {
	Kind      string `json:"kind"`
	Group     string `json:"group,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type jsonRemaining struct {
	jsonObjectRef
	Why        string   `json:"why"`
	Finalizers []string `json:"finalizers,omitempty"`
}

func objectRef(id manifest.ObjectID) jsonObjectRef {
	return jsonObjectRef{Kind: id.Kind, Group: id.Group, Namespace: id.Namespace, Name: id.Name}
}

func toJSONUninstalled(u *plan.Uninstalled) *jsonUninstalled {
	if u == nil {
		return nil
	}
	ju := &jsonUninstalled{OK: u.OK(), HelmError: u.Failed, Deleted: make([]jsonObjectRef, 0, len(u.Deleted)),
		Remaining: make([]jsonRemaining, 0, len(u.Remaining)), LeftBehind: u.Left}
	if ju.LeftBehind == nil {
		ju.LeftBehind = []string{}
	}
	for _, id := range u.Deleted {
		ju.Deleted = append(ju.Deleted, objectRef(id))
	}
	for _, r := range u.Remaining {
		ju.Remaining = append(ju.Remaining, jsonRemaining{jsonObjectRef: objectRef(r.ID), Why: r.Why, Finalizers: r.Finalizers})
	}
	return ju
}
