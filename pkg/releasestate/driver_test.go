package releasestate

import (
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func recordSecret(name string, rev string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v" + rev, Namespace: "ns",
			Labels: map[string]string{"owner": "helm", "name": name, "version": rev, "status": "deployed"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": data},
	}
}

// TestBoundedDriver: every read of Helm's storage goes through the bounded
// decoder, and a record that cannot be read is named, beside those that
// can, never skipped (Helm's driver skips it) nor "not found".
func TestBoundedDriver(t *testing.T) {
	cs := fake.NewClientset(
		recordSecret("app", "1", encoded(t, `{"name":"app","version":1,"namespace":"ns","info":{"status":"superseded"}}`, true)),
		recordSecret("app", "2", encoded(t, `{"name":"app","version":"2"}`, true)),
		recordSecret("app", "3", gzipBomb(300<<20)),
		recordSecret("broken", "1", encoded(t, "{", true)),
	)
	store := boundStorage(storage.Init(driver.NewSecrets(cs.CoreV1().Secrets("ns"))), "ns", func() (kubernetes.Interface, error) { return cs, nil })

	hist, err := store.History("app")
	if len(hist) != 1 || hist[0].Version != 1 {
		t.Fatalf("history %v, want the readable revision 1", hist)
	}
	bad := Unreadables(err)
	if len(bad) != 2 {
		t.Fatalf("error %v, want revisions 2 and 3 named", err)
	}
	for _, want := range []string{"sh.helm.release.v1.app.v2 in namespace ns is unreadable: wrong type", "sh.helm.release.v1.app.v3 in namespace ns is unreadable: decompresses to more than the limit of 256 MiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err, want)
		}
	}

	_, err = store.Last("broken")
	if !errors.Is(err, ErrUnreadable) || errors.Is(err, driver.ErrReleaseNotFound) || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("Last of a release whose only record is broken: %v, want it named unreadable", err)
	}
	if _, err := store.Get("app", 3); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("Get of the bomb: %v, want unreadable", err)
	}
	if _, err := store.Delete("app", 3); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("Delete of the bomb: %v, want unreadable (Helm's Delete decodes it unbounded)", err)
	}
	if _, err := store.Get("gone", 1); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Fatalf("Get of nothing: %v, want not found", err)
	}
	all, err := store.ListReleases()
	if len(all) != 1 || len(Unreadables(err)) != 3 {
		t.Fatalf("list: %d releases, %v; want 1 and 3 named", len(all), err)
	}
	rel, err := store.Get("app", 1)
	if err != nil || rel.Labels["owner"] != "" {
		t.Fatalf("Get: %v, labels %v; want Helm's without its system labels", err, rel.Labels)
	}
	if _, err := store.Delete("app", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("ns").Get(t.Context(), "sh.helm.release.v1.app.v1", metav1.GetOptions{}); err == nil {
		t.Fatal("Delete left the record")
	}
}

// TestBoundedDriver4: Helm 4's storage reads through the same decoder.
func TestBoundedDriver4(t *testing.T) {
	cs := fake.NewClientset(
		recordSecret("app", "1", encoded(t, `{"name":"app","version":1,"namespace":"ns","info":{"status":"deployed"},"apply_method":"ssa"}`, true)),
		recordSecret("app", "2", gzipBomb(300<<20)),
	)
	store := BoundStorage4(storage4.Init(driver4.NewSecrets(cs.CoreV1().Secrets("ns"))), "ns", func() (kubernetes.Interface, error) { return cs, nil })
	hist, err := store.History("app")
	if len(hist) != 1 || len(Unreadables(err)) != 1 || !strings.Contains(err.Error(), "v2 in namespace ns is unreadable: decompresses to more than") {
		t.Fatalf("history %d, %v; want revision 1 and the bomb named", len(hist), err)
	}
	if _, err := store.Get("app", 2); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("Get of the bomb: %v", err)
	}
	if _, err := store.Get("app", 9); !errors.Is(err, driver4.ErrReleaseNotFound) {
		t.Fatalf("Get of nothing: %v, want Helm 4's not found", err)
	}
}
