package testcluster

import "testing"

func TestNamespacePrefix(t *testing.T) {
	for name, want := range map[string]string{
		"TestDeploy":        "testdeploy-",
		"TestX/sub_case#01": "testx-sub-case-01-",
		"Test_averyveryveryveryverylongnamethatgoeson": "test-averyveryveryveryverylongnamethatgo-",
		"9lives": "t9lives-",
		"///":    "t-",
	} {
		if got := namespacePrefix(name); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", name, got, want)
		}
	}
}
