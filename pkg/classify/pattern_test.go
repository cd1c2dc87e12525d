package classify

import "testing"

func TestUnderPattern(t *testing.T) {
	tests := []struct {
		path, pattern string
		want          bool
	}{
		{"webhooks[2].clientConfig.caBundle", "webhooks[*].clientConfig.caBundle", true},
		{"webhooks[2].clientConfig.caBundle", "webhooks[*].clientConfig", true},
		{"webhooks[2].clientConfig.service", "webhooks[*].clientConfig.caBundle", false},
		{"webhooks[2].clientConfig.caBundleX", "webhooks[*].clientConfig.caBundle", false},
		{"webhooks[2]", "webhooks[*]", true},
		{"webhooks", "webhooks[*]", false},
		{"spec.template.spec.containers[0].env[3].value", "spec.template.spec.containers[*].env[*].value", true},
		{"metadata.annotations[a.b/c]", "metadata.annotations[*]", true},
		{"spec.replicas", "spec.replicas", true},
		{"spec.replicasX", "spec.replicas", false},
	}
	for _, tt := range tests {
		if got := UnderPattern(tt.path, tt.pattern); got != tt.want {
			t.Errorf("UnderPattern(%q, %q) = %v, want %v", tt.path, tt.pattern, got, tt.want)
		}
	}
}
