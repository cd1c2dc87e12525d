package render

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// nondeterministicFuncs are the template functions (Sprig's and Helm's)
// whose output can differ between two renders of the same chart with the
// same values: randomness, the clock, DNS, the cluster (lookup), and Go's
// map order (keys, values).
var nondeterministicFuncs = map[string]bool{
	// Randomness.
	"randAlpha": true, "randAlphaNum": true, "randAscii": true, "randNumeric": true,
	"randInt": true, "randBytes": true, "shuffle": true, "uuidv4": true,
	"bcrypt": true, "htpasswd": true, "encryptAES": true, "genPrivateKey": true,
	"genCA": true, "genCAWithKey": true, "genSelfSignedCert": true, "genSelfSignedCertWithKey": true,
	"genSignedCert": true, "genSignedCertWithKey": true,
	// The clock: now, and the date functions that read it when not given a time.
	"now": true, "ago": true, "date": true, "dateInZone": true, "htmlDate": true,
	"htmlDateInZone": true, "durationRound": true,
	// The network and the cluster.
	"getHostByName": true, "lookup": true,
	// Map iteration order.
	"keys": true, "values": true,
}

// Nondeterministic says why two renders of res's chart with res's values
// may differ: the first mention of a function whose output can change from
// one render to the next (randAlphaNum, genCA, now, lookup, ...), or a
// post-renderer, which may do anything. "" means the second render would
// give the same manifest, so the fields regenerated on every render need
// not be looked for.
//
// It is a conservative word scan: every template and file of the chart and
// its subcharts, the chart metadata and every key and string of the values
// (the charts' own and the user's: tpl can evaluate any of them), whether
// the word is in a template action, a comment or plain text. A mention
// costs a second render, never a wrong plan.
func Nondeterministic(res *Result, opts Options) string {
	if opts.PostRenderer != "" {
		return "a post-renderer (" + opts.PostRenderer + ") runs on each render"
	}
	if res == nil || res.Chart == nil {
		return "no chart"
	}
	if res.Next != nil {
		if w := valuesMention(res.Next.Config); w != "" {
			return fmt.Sprintf("the values mention %q", w)
		}
	}
	if w := valuesMention(res.Values); w != "" {
		return fmt.Sprintf("the values mention %q", w)
	}
	return chartMention(res.Chart)
}

// chartMention is Nondeterministic's scan of ch and its subcharts.
func chartMention(ch *chart.Chart) string {
	name := ch.Name()
	for _, files := range [][]*chart.File{ch.Templates, ch.Files} {
		for _, f := range files {
			if f == nil {
				continue
			}
			if w := mention(string(f.Data)); w != "" {
				return fmt.Sprintf("%s in chart %s mentions %q", f.Name, name, w)
			}
		}
	}
	if ch.Metadata != nil {
		meta, err := json.Marshal(ch.Metadata)
		if err != nil {
			return fmt.Sprintf("chart %s: metadata: %v", name, err)
		}
		if w := mention(string(meta)); w != "" {
			return fmt.Sprintf("Chart.yaml of chart %s mentions %q", name, w)
		}
	}
	if w := valuesMention(ch.Values); w != "" {
		return fmt.Sprintf("the values of chart %s mention %q", name, w)
	}
	for _, dep := range ch.Dependencies() {
		if why := chartMention(dep); why != "" {
			return why
		}
	}
	return ""
}

// valuesMention is mention over every key and string of a values tree.
func valuesMention(v interface{}) string {
	switch t := v.(type) {
	case string:
		return mention(t)
	case map[string]interface{}:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same answer every time
		for _, k := range keys {
			if w := mention(k); w != "" {
				return w
			}
			if w := valuesMention(t[k]); w != "" {
				return w
			}
		}
	case []interface{}:
		for _, e := range t {
			if w := valuesMention(e); w != "" {
				return w
			}
		}
	case chartutil.Values:
		return valuesMention(map[string]interface{}(t))
	case nil, bool, int, int64, float64, json.Number:
	default:
		// Any other value a template could print: as it prints.
		return mention(fmt.Sprint(t))
	}
	return ""
}

// mention returns the first word of s (a run of letters, digits and
// underscores) that names a nondeterministic function, or "%p" where s
// may print a pointer, whose address differs between renders; "" if none.
func mention(s string) string {
	if strings.Contains(s, "%p") {
		return "%p"
	}
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isWordByte(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if w := s[start:i]; nondeterministicFuncs[w] {
				return w
			}
			start = -1
		}
	}
	return ""
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
