package releasestate

import (
	"strings"
	"testing"
)

func TestNewConfiguration(t *testing.T) {
	for _, d := range []string{"", "secret", "configmap", "memory"} {
		cfg, err := NewConfiguration(nil, relNS, d, nil)
		if err != nil {
			t.Fatalf("driver %q: %v", d, err)
		}
		want := map[string]string{"": "Secret", "secret": "Secret", "configmap": "ConfigMap", "memory": "Memory"}[d]
		if got := cfg.Releases.Name(); got != want {
			t.Errorf("driver %q: storage %s, want %s", d, got, want)
		}
	}
	if _, err := NewConfiguration(nil, relNS, "etcd", nil); err == nil || !strings.Contains(err.Error(), `HELM_DRIVER="etcd"`) {
		t.Errorf("unknown driver err = %v", err)
	}
}
