package redact

import (
	"slices"
	"testing"
)

func TestURLPasswords(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{"https://ci:hunter2@charts.example.com/x", []string{"hunter2"}},
		{"https://ci:hunter2%21x@charts.example.com/a@b", []string{"hunter2!x", "hunter2%21x"}},
		{"oci://ci:p%40ss@registry.example.com/charts/app", []string{"p@ss", "p%40ss"}},
		{"https://ci@charts.example.com/x", nil},
		{"https://charts.example.com/x", nil},
		{"./chart", nil},
		{"repo/chart", nil},
	} {
		if got := URLPasswords(tc.raw); !slices.Equal(got, tc.want) {
			t.Errorf("URLPasswords(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://ci:hunter2@charts.example.com/x.tgz": "https://ci:xxxxx@charts.example.com/x.tgz",
		"https://ci@charts.example.com/x.tgz":         "https://ci@charts.example.com/x.tgz",
		"./chart":                                     "./chart",
		"db":                                          "db",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
