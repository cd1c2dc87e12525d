package helmtest

import (
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// Record is the part of a stored release record (Secret
// sh.helm.release.v1.NAME.vN, as Helm 3 and 4 write it) the end-to-end
// tests compare between a release the tool applied and its twin that helm
// applied.
type Record struct {
	Name        string `json:"name"`
	Version     int    `json:"version"`
	ApplyMethod string `json:"apply_method"`
	Manifest    string `json:"manifest"`
	Info        struct {
		Status      string `json:"status"`
		Description string `json:"description"`
	} `json:"info"`
	Hooks []struct {
		Name string `json:"name"`
	} `json:"hooks"`
}

// ReadRecord reads and decodes revision version of release name from the
// Secret storage of namespace ns.
func ReadRecord(t testing.TB, cs kubernetes.Interface, ns, name string, version int) Record {
	t.Helper()
	key := fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
	s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("release record %s: %v", key, err)
	}
	var r Record
	if err := releasestate.DecodeRecord(s.Data["release"], &r); err != nil {
		t.Fatalf("release record %s: %v", key, err)
	}
	return r
}

// ManagedFields returns an object's managed-fields entries without their
// times, sorted, one "manager operation apiVersion fields" string each, so
// that two objects' can be compared.
func ManagedFields(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		sub := ""
		if e.Subresource != "" {
			sub = " /" + e.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s%s %s", e.Manager, e.Operation, e.APIVersion, sub, fields))
	}
	sort.Strings(out)
	return out
}
