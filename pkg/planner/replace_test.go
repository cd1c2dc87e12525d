package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

const secretLive = `
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ns
  resourceVersion: "42"
  annotations: {meta.helm.sh/release-name: r, meta.helm.sh/release-namespace: ns}
  labels: {app.kubernetes.io/managed-by: Helm}
data: {password: aHVudGVyMi1vbGQ=}
`

const secretRender = "---\n# Source: app/templates/s.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: hunter2-new}\n"

// TestReplaceVerdicts classifies the server's answer to Helm's --force PUT
// (a dry-run replace sent for every object that exists): what an accepted
// PUT stores compared with live, fields it drops included, and a refused
// PUT as invalid with the server's causes, masked; without --force, or
// with a server-side apply, no PUT is sent.
func TestReplaceVerdicts(t *testing.T) {
	jobRefused := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "settings", field.ErrorList{
		field.Required(field.NewPath("spec", "selector"), ""),
		field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), map[string]string{"app": "x"}, "`selector` does not match template `labels`"),
	})
	tests := []struct {
		name       string
		live       string // derivedLive when ""
		annotate   map[string]string
		next       string
		force, ssa bool
		replaceErr error
		// want: action, class, blocking; path and message of the first
		// reason ("" for none); a note.
		action   plan.Action
		class    plan.Class
		blocking bool
		path     string
		message  string
		note     string
		// replaced: a PUT was sent.
		replaced bool
	}{
		{name: "unchanged, PUT clean: noop", next: settings("app-1", "a"), force: true,
			action: plan.ActionNoop, replaced: true},
		{name: "unchanged, PUT drops another manager's annotation", next: settings("app-1", "a"), force: true,
			annotate: map[string]string{"other.example/owner": "ops"},
			action:   plan.ActionUpdate, class: plan.ClassInPlace, path: "metadata.annotations[other.example/owner]", message: DroppedByReplace, replaced: true},
		{name: "changed data, PUT clean", next: settings("app-1", "b"), force: true,
			action: plan.ActionUpdate, class: plan.ClassInPlace, path: "data.mode", message: "changed", replaced: true},
		{name: "unchanged, PUT refused: invalid with the causes", next: settings("app-1", "a"), force: true, replaceErr: jobRefused,
			action: plan.ActionUpdate, class: plan.ClassInvalid, blocking: true, path: "spec.selector",
			message: "Helm's --force replaces the object with PUT, which the server refuses: Required value", note: "without --force Helm patches it instead (noop)", replaced: true},
		{name: "PUT refused by an admission webhook", next: settings("app-1", "b"), force: true,
			replaceErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "settings", fmt.Errorf("admission webhook %q denied the request", "deny.example")),
			action:     plan.ActionUpdate, class: plan.ClassInvalid, blocking: true, message: "denied the request", note: "without --force Helm patches it instead (in-place)", replaced: true},
		{name: "RBAC forbids the PUT: the patch's verdict, said so", next: settings("app-1", "b"), force: true,
			replaceErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "settings", fmt.Errorf(`User "u" cannot update resource "configmaps"`)),
			action:     plan.ActionUpdate, class: plan.ClassInPlace, path: "data.mode", note: "which was not checked", replaced: true},
		{name: "Secret: the server's echo of a value is masked", live: secretLive, next: secretRender, force: true,
			replaceErr: apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "creds", field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2-new", "denied")}),
			action:     plan.ActionUpdate, class: plan.ClassInvalid, blocking: true, path: "data.password", message: "denied", replaced: true},
		{name: "without --force: the patch, no PUT", next: settings("app-1", "a"), replaceErr: jobRefused,
			action: plan.ActionNoop},
		{name: "server-side apply: no PUT (Helm 4 refuses it; the plan's blocker says so)", next: settings("app-1", "a"), force: true, ssa: true, replaceErr: jobRefused,
			action: plan.ActionNoop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.live
			if src == "" {
				src = derivedLive
			}
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(src), &obj.Object); err != nil {
				t.Fatal(err)
			}
			if tc.annotate != nil {
				a := obj.GetAnnotations()
				for k, v := range tc.annotate {
					a[k] = v
				}
				obj.SetAnnotations(a)
			}
			c, srv := patchCluster(obj, "")
			srv.ReplaceErr = tc.replaceErr
			rel := plan.Release{Name: "r", Namespace: "ns", ApplyMethod: plan.ApplyMethodCSA, ForceReplace: tc.force}
			if tc.ssa {
				rel.ApplyMethod = plan.ApplyMethodSSA
			}
			prev := settings("app-1", "a")
			if tc.live != "" {
				prev = strings.Replace(secretRender, "hunter2-new", "hunter2-old", 1)
			}
			out, err := New(c, "v1.37.2").Plan(context.Background(), Input{Release: rel, PreviousManifest: prev, NextManifest: tc.next})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Changes) != 1 {
				t.Fatalf("changes %+v", out.Changes)
			}
			got := out.Changes[0]
			if replaced := len(srv.Replaced) > 0; replaced != tc.replaced {
				t.Fatalf("PUTs sent at %q, want sent=%v", srv.Replaced, tc.replaced)
			}
			if tc.replaced && srv.Replaced[0] != "42" {
				t.Errorf("PUT sent at resourceVersion %q, want the live object's, 42 (as Helm's Replace sets it)", srv.Replaced[0])
			}
			if got.Action != tc.action || got.Class != tc.class || got.Blocking != tc.blocking || got.Destructive != tc.blocking {
				t.Fatalf("action %s class %q blocking %v destructive %v, want %s %q %v\nreasons %+v\nnotes %q",
					got.Action, got.Class, got.Blocking, got.Destructive, tc.action, tc.class, tc.blocking, got.Reasons, got.Notes)
			}
			if tc.message != "" || tc.path != "" {
				if len(got.Reasons) == 0 || got.Reasons[0].Path != tc.path || !strings.Contains(got.Reasons[0].Message, tc.message) {
					t.Errorf("reasons %+v, want the first at %q saying %q", got.Reasons, tc.path, tc.message)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(got.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one saying %q", got.Notes, tc.note)
			}
			if tc.class == plan.ClassInvalid && (got.Before == nil || got.After == nil) {
				t.Errorf("a refused PUT's change shows no objects: before %v after %v", got.Before, got.After)
			}
			if all := fmt.Sprintf("%+v", got); strings.Contains(all, "hunter2") {
				t.Errorf("a Secret value reached the plan: %s", all)
			}
		})
	}
}
