package classify

import (
	"strings"
	"testing"
)

// TestTypeReasons: the server's two wordings of a value of the wrong type
// become a reason at the field, saying what the server expects and what
// the chart sets; other messages are left to the usual reasons.
func TestTypeReasons(t *testing.T) {
	live := map[string]interface{}{"spec": map[string]interface{}{"replicas": int64(2), "paused": false}}
	local := map[string]interface{}{"spec": map[string]interface{}{"replicas": "notanumber", "paused": false}}
	for _, tc := range []struct {
		name, message, path, want string
	}{
		{"strategic merge patch", `Invalid value: "map[spec:map[replicas:notanumber template:map[spec:map[containers:[map[image:nginx:1.27.4 name:web]]]]]]": unrecognized type: int32`,
			"spec.replicas", `the server expects int32 here, the chart sets a string (the server: "unrecognized type: int32")`},
		{"JSON decoder", `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`,
			"spec.replicas", `the server expects int32 here, the chart sets a string (the server: "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")`},
		{"something else", `spec.replicas: Invalid value: -1: must be greater than or equal to 0`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := Update{}.typeReasons(tc.message, live, local)
			if tc.want == "" {
				if rs != nil {
					t.Fatalf("typeReasons = %+v; want nil", rs)
				}
				return
			}
			if len(rs) != 1 || rs[0].Path != tc.path || rs[0].Message != tc.want || rs[0].After != "notanumber" || strings.Contains(rs[0].Message, "map[") {
				t.Fatalf("typeReasons = %+v; want one at %s saying %q", rs, tc.path, tc.want)
			}
		})
	}
}
