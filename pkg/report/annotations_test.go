package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func TestGitHubAnnotations(t *testing.T) {
	p := &plan.Plan{Changes: []plan.Change{
		{ID: manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: "prod", Name: "db"}, Action: plan.ActionUpdate,
			Class: plan.ClassRecreateRequired, Destructive: true, Fingerprint: "abc",
			Reasons: []plan.Reason{{Path: "spec.serviceName", Message: "field is immutable\nsecond line", Source: plan.SourceServer}}},
		{ID: manifest.ObjectID{Kind: "PersistentVolumeClaim", Namespace: "prod", Name: "data"}, Action: plan.ActionDelete,
			Destructive: true, Acknowledged: true, Reasons: []plan.Reason{{Message: "deleting it deletes its data", Source: plan.SourceHelm}}},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "c"}, Action: plan.ActionUpdate, Class: plan.ClassInPlace},
	}}
	var out bytes.Buffer
	if err := GitHubAnnotations(&out, p); err != nil {
		t.Fatal(err)
	}
	want := "::error title=safe-upgrade%3A recreate-required StatefulSet.apps/prod/db::spec.serviceName: field is immutable%0Asecond line (not acknowledged: add --ack StatefulSet.apps/prod/db@abc)\n" +
		"::warning title=safe-upgrade%3A delete PersistentVolumeClaim/prod/data::deleting it deletes its data (source: helm) (acknowledged)\n"
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(out.String(), "\n") != 2 {
		t.Fatal("a non-destructive change was annotated")
	}
}
