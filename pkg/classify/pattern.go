package classify

import "strings"

// UnderPattern is Under for a prefix that may hold "[*]": any list index or
// bracketed key there ("webhooks[*].clientConfig.caBundle" covers
// "webhooks[2].clientConfig.caBundle").
func UnderPattern(path, pattern string) bool {
	for {
		head, rest, ok := strings.Cut(pattern, "[*]")
		if !ok {
			return Under(path, pattern)
		}
		if !strings.HasPrefix(path, head+"[") {
			return false
		}
		end := strings.IndexByte(path[len(head):], ']')
		if end < 0 {
			return false
		}
		path, pattern = path[len(head)+end+1:], rest
		if pattern == "" {
			return true // the pattern ends at the wildcard: anything below it
		}
	}
}
