package releasestate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"}, objs...)
}

func record(release string, rev int) *RevisionRecord {
	return &RevisionRecord{Release: release, Namespace: "ns", Revision: rev, Operation: "upgrade", ManifestDigest: ManifestDigest("m")}
}

func write(t *testing.T, dyn *dynamicfake.FakeDynamicClient, rec *RevisionRecord) {
	t.Helper()
	data, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteRevisionRecord(context.Background(), dyn, rec, data); err != nil {
		t.Fatal(err)
	}
}

// TestRevisionRecordsRoundTrip: records are written (and rewritten) per
// revision, read back with one LIST of the release's only, and pruned to
// the revisions Helm keeps.
func TestRevisionRecordsRoundTrip(t *testing.T) {
	dyn := fakeClient()
	for rev := 1; rev <= 3; rev++ {
		write(t, dyn, record("app", rev))
	}
	write(t, dyn, record("other", 1))
	again := record("app", 2)
	again.Helm = "applied: deployed"
	write(t, dyn, again) // the same revision again: replaced, not refused

	recs, bad, err := ListRevisionRecords(context.Background(), dyn, "ns", "app")
	if err != nil || len(bad) > 0 || len(recs) != 3 || recs[2].Helm != "applied: deployed" || recs[3].ManifestDigest != ManifestDigest("m") {
		t.Fatalf("records %+v, bad %v, err %v", recs, bad, err)
	}
	lists := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d LISTs, want 1", lists)
	}
	gone, err := PruneRevisionRecords(context.Background(), dyn, "ns", "app", func(rev int) bool { return rev >= 2 })
	if err != nil || len(gone) != 1 || gone[0] != 1 {
		t.Fatalf("pruned %v, %v; want revision 1", gone, err)
	}
	recs, _, _ = ListRevisionRecords(context.Background(), dyn, "ns", "app")
	if len(recs) != 2 || recs[1] != nil {
		t.Errorf("after pruning: %v", recs)
	}
	if others, _, _ := ListRevisionRecords(context.Background(), dyn, "ns", "other"); len(others) != 1 {
		t.Errorf("another release's records were pruned: %v", others)
	}
}

// TestRevisionRecordForged: a ConfigMap with the labels that is not a
// record of this release and revision is left out and named.
func TestRevisionRecordForged(t *testing.T) {
	cm := func(name, data string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": name, "namespace": "ns",
				"labels": map[string]interface{}{RevisionRecordLabel: "revision", RevisionRecordReleaseLabel: "app"}},
			"data": map[string]interface{}{"record.json": data}}}
	}
	other, _ := json.Marshal(&RevisionRecord{APIVersion: RevisionRecordAPIVersion, Release: "db", Namespace: "ns", Revision: 1})
	renamed, _ := json.Marshal(&RevisionRecord{APIVersion: RevisionRecordAPIVersion, Release: "app", Namespace: "ns", Revision: 9})
	tests := []struct{ name, data, want string }{
		{RevisionRecordName("app", 1), "{not json", "not a revision record"},
		{RevisionRecordName("app", 1), string(other), `it is of release "db"`},
		{RevisionRecordName("app", 1), string(renamed), "it names revision 9"},
		{RevisionRecordName("app", 1), `{"apiVersion":"v0"}`, `apiVersion "v0"`},
		{RevisionRecordName("app", 1), strings.Repeat("x", revisionRecordMaxRead+1), "over the bound"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			recs, bad, err := ListRevisionRecords(context.Background(), fakeClient(cm(tt.name, tt.data)), "ns", "app")
			if err != nil || len(recs) != 0 || len(bad) != 1 || !strings.Contains(bad[0], tt.want) {
				t.Errorf("records %v, bad %v, err %v; want none, one bad saying %q", recs, bad, err, tt.want)
			}
		})
	}
}

// TestRevisionRecordBound: a record over its bound loses its diffs first,
// then its changes and outcome, each noted; the counts stay.
func TestRevisionRecordBound(t *testing.T) {
	big := json.RawMessage(`[{"diff":"` + strings.Repeat("x", RevisionRecordMaxBytes) + `"}]`)
	rec := record("app", 1)
	rec.Summary, rec.Changes = json.RawMessage(`{"rolling":1}`), big
	data, err := rec.Encode(func(json.RawMessage) json.RawMessage { return json.RawMessage(`[{"diff":""}]`) })
	if err != nil || len(data) > RevisionRecordMaxBytes || !strings.Contains(string(data), "diffs are left out") || !strings.Contains(string(data), `"rolling":1`) {
		t.Fatalf("without diffs: %d bytes, %v:\n%.300s", len(data), err, data)
	}
	data, err = rec.Encode(func(c json.RawMessage) json.RawMessage { return c })
	if err != nil || len(data) > RevisionRecordMaxBytes || !strings.Contains(string(data), "the changes and the outcome are left out") || !strings.Contains(string(data), `"rolling":1`) {
		t.Fatalf("without changes: %d bytes, %v:\n%.300s", len(data), err, data)
	}
	var back RevisionRecord
	if err := json.Unmarshal(data, &back); err != nil || back.Changes != nil {
		t.Errorf("decoded %+v, %v", back, err)
	}
}

// TestDigestSpellings: both stored spellings of a manifest's digest stay
// as records and journals already hold them.
func TestDigestSpellings(t *testing.T) {
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // sha256 of ""
	if got := ManifestDigest(""); got != empty {
		t.Errorf("ManifestDigest = %s, want %s", got, empty)
	}
	if got := JournalDigest(""); got != "sha256:"+empty {
		t.Errorf("JournalDigest = %s, want sha256:%s", got, empty)
	}
}
