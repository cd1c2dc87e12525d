package helmsdk

import "helm.sh/helm/v3/pkg/chartutil"

// CopyValues deep-copies a values tree (maps and slices of YAML/JSON
// values), keeping Helm 3's chartutil.Values maps as they are: Helm merges
// the previous release's values into the map it is given (--reuse-values),
// and the plan must stay as it was.
func CopyValues(v map[string]interface{}) map[string]interface{} {
	m, _ := copyValue(v, false).(map[string]interface{})
	return m
}

// PlainValues is CopyValues for Helm 4, which does not know Helm 3's
// chartutil.Values type: every map becomes a plain one.
func PlainValues(v map[string]interface{}) map[string]interface{} {
	m, _ := copyValue(v, true).(map[string]interface{})
	return m
}

func copyValue(x interface{}, plain bool) interface{} {
	switch t := x.(type) {
	case chartutil.Values:
		if plain {
			return copyValue(map[string]interface{}(t), plain)
		}
		m, _ := copyValue(map[string]interface{}(t), plain).(map[string]interface{})
		return chartutil.Values(m)
	case map[string]interface{}:
		if t == nil {
			return map[string]interface{}(nil)
		}
		out := make(map[string]interface{}, len(t))
		for k, e := range t {
			out[k] = copyValue(e, plain)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = copyValue(e, plain)
		}
		return out
	default:
		return x
	}
}
