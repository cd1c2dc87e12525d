package releasestate

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// TestReadJournalUntrustedBytes: a journal Secret that is too large, does
// not parse or lists too many objects is refused with an error naming the
// Secret.
func TestReadJournalUntrustedBytes(t *testing.T) {
	many := `{"objects": [` + strings.Repeat(`{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}},`, maxJournalObjects) +
		`{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}}]}`
	tests := []struct {
		name, data, want string
	}{
		{"too large", strings.Repeat("A", maxJournalBytes+4), "bytes, more than a journal can be"},
		{"not base64", "!!!", "illegal base64"},
		{"not JSON", base64.StdEncoding.EncodeToString([]byte("{")), "decoding the journal"},
		{"too many objects", base64.StdEncoding.EncodeToString([]byte(many)), "more than 500: not a journal this tool wrote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			s := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Secret", "type": JournalType,
				"metadata": map[string]interface{}{"name": JournalName(relName), "namespace": relNS},
				"data":     map[string]interface{}{journalKey: tt.data}}}
			if err := fc.client.Tracker().Create(live.SecretsGVR, s, relNS); err != nil {
				t.Fatal(err)
			}
			_, err := ReadJournal(context.Background(), fc.Cluster, relNS, relName)
			if err == nil || !strings.Contains(err.Error(), "Secret demo/safe-upgrade-journal.app") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming the Secret and %q", err, tt.want)
			}
		})
	}
}
