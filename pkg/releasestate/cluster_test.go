package releasestate

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

const (
	relName = "app"
	relNS   = "demo"
)

// fakeCluster is an empty cluster (client-go's dynamic fake) serving the
// Leases and Secrets the release's state is kept in.
type fakeCluster struct {
	*live.Cluster
	client *dynamicfake.FakeDynamicClient
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{live.LeasesGVR: "LeaseList", live.SecretsGVR: "SecretList"}
	fc := &fakeCluster{client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)}
	fc.Cluster = &live.Cluster{Dynamic: fc.client}
	return fc
}
