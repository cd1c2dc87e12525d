package predict

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	corev1 "k8s.io/api/core/v1"
)

// serverDefaultPodSecurity is the kube-apiserver's PodSecurity policy for
// a namespace without labels when its admission configuration sets none
// (k8s.io/pod-security-admission admission/api/v1 defaults: privileged,
// latest). A server configured otherwise is a documented limit: no client
// can read that configuration.
var serverDefaultPodSecurity = api.Policy{
	Enforce: api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
	Audit:   api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
	Warn:    api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
}

// podSecurityLibraryMinor is the Kubernetes minor of
// k8s.io/pod-security-admission in go.mod (TestPodSecurityLibraryMinor):
// its checks are those of every version up to it, and a newer server's
// may differ.
const podSecurityLibraryMinor = 37

// podTemplatePaths are where the pod controllers PodSecurity admission
// evaluates on every create and update keep their pod template.
var podTemplatePaths = map[string][]string{
	"/ReplicationController": {"spec", "template"},
	"/PodTemplate":           {"template"},
	"apps/Deployment":        {"spec", "template"},
	"apps/DaemonSet":         {"spec", "template"},
	"apps/StatefulSet":       {"spec", "template"},
	"apps/ReplicaSet":        {"spec", "template"},
	"batch/Job":              {"spec", "template"},
	"batch/CronJob":          {"spec", "jobTemplate", "spec", "template"},
}

// PodSecurityEmulation is the version to build the policy evaluator at for
// an API server of Kubernetes minor serverMinor, as kube-apiserver builds
// its own (its emulation version): an older server evaluates `latest`, and
// any newer version, by its own minor's checks, not the library's (1.37
// allows sysctls 1.36 forbids). nil, the library's own checks, for a
// server of the library's minor or newer, or of an unknown one (which
// PodSecurityWarns asks about).
func PodSecurityEmulation(serverMinor int) *api.Version {
	if serverMinor <= 0 || serverMinor >= podSecurityLibraryMinor {
		return nil
	}
	v := api.MajorMinorVersion(1, serverMinor)
	return &v
}

// PodController reports whether obj is a pod controller PodSecurity
// admission evaluates on update.
func PodController(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	_, ok := podTemplatePaths[gvk.Group+"/"+gvk.Kind]
	return ok
}

// PodSecurityWarns returns why PodSecurity admission may warn about an
// update storing obj in a namespace labelled nsLabels, or "" when it
// cannot. Its ValidatePodController evaluates the pod template of every
// update of a pod controller, whatever the update changes, and warns when
// the template fails the namespace's warn level (enforce and audit reach
// no client for a controller). The policy is read from the labels as
// admission reads them (a bad warn level fails open, warn follows a
// stricter enforce); eval, when set, evaluates the template exactly as
// admission does, so a compliant template is not a warning; nil asks
// whenever the warn level is not privileged. serverMinor is the API
// server's Kubernetes minor (0: unknown): a server newer than the library
// may evaluate checks it does not know.
func PodSecurityWarns(eval policy.Evaluator, obj *unstructured.Unstructured, nsLabels map[string]string, serverMinor int) string {
	gvk := obj.GroupVersionKind()
	path, ok := podTemplatePaths[gvk.Group+"/"+gvk.Kind]
	if !ok {
		return ""
	}
	p, _ := api.PolicyToEvaluate(nsLabels, serverDefaultPodSecurity)
	if p.Warn.Level == api.LevelPrivileged {
		return ""
	}
	why := "PodSecurity may warn at " + p.Warn.String()
	if eval == nil {
		return why
	}
	if (serverMinor == 0 || serverMinor > podSecurityLibraryMinor) &&
		(p.Warn.Version.Latest() || p.Warn.Version.Minor() > podSecurityLibraryMinor) {
		return why + " (checks of a server newer than 1." + strconv.Itoa(podSecurityLibraryMinor) + ")"
	}
	raw, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil {
		return "pod template unreadable"
	}
	if !found {
		return "" // admission skips a controller without a template
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl); err != nil {
		return "pod template unreadable"
	}
	if !policy.AggregateCheckResults(eval.EvaluatePod(p.Warn, &tmpl.ObjectMeta, &tmpl.Spec)).Allowed {
		return why
	}
	return ""
}
