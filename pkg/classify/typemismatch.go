package classify

import (
	"encoding/json"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// The server's words for a value of the wrong type: the JSON decoder's
// (naming the Go field and its JSON path) and the strategic merge patch's,
// which names the type only and echoes the whole patch before it.
var (
	unmarshalType    = regexp.MustCompile(`cannot unmarshal (\w+) into Go (?:struct field \w+\.([\w.]+)|value) of type ([\w.\[\]]+)`)
	unrecognizedType = regexp.MustCompile(`unrecognized type: ([\w.\[\]]+)`)
)

// typeReasons turns the server's refusal of a value of the wrong type
// (--set replicas=notanumber) into reasons that name the field and what the
// server expects there, the server's words quoted without the patch it
// echoes; nil when message says something else. The field is the one the
// server names, else each changed field whose value changed type.
func (u Update) typeReasons(message string, live, local map[string]interface{}) []plan.Reason {
	var path, want, said string
	if m := unmarshalType.FindStringSubmatch(message); m != nil {
		path, want, said = m[2], m[3], m[0]
	} else if m := unrecognizedType.FindStringSubmatch(message); m != nil {
		want, said = m[1], m[0]
	} else {
		return nil
	}
	explain := func(p string) string {
		return fmt.Sprintf("the server expects %s here, the chart sets %s (the server: %q)", want, jsonKind(Lookup(local, p)), said)
	}
	if path != "" {
		return []plan.Reason{reason(path, explain(path), plan.SourceServer, live, local)}
	}
	var out []plan.Reason
	for _, p := range u.localChanges(live, local) {
		if before, after := Lookup(live, p), Lookup(local, p); before != nil && jsonKind(before) != jsonKind(after) {
			out = append(out, reason(p, explain(p), plan.SourceServer, live, local))
		}
	}
	if len(out) == 0 {
		return []plan.Reason{{Message: fmt.Sprintf("a field of the patch is not of the type the server expects (%s); see the diff (the server: %q)", want, said), Source: plan.SourceServer}}
	}
	return capReasons(out)
}

// typeCauseReasons is causeReasons with the type refusals explained
// (typeReasons).
func (u Update) typeCauseReasons(cs []metav1.StatusCause, live, local map[string]interface{}) []plan.Reason {
	var out []plan.Reason
	for _, c := range cs {
		if rs := u.typeReasons(c.Message, live, local); rs != nil {
			out = append(out, rs...)
			continue
		}
		out = append(out, causeReasons([]metav1.StatusCause{c}, u.Secret)...)
	}
	return out
}

// jsonKind names the JSON type of a decoded value as a user reads it.
func jsonKind(v interface{}) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float64, json.Number:
		return "a number"
	case []interface{}:
		return "a list"
	case map[string]interface{}:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
