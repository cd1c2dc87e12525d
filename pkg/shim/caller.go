package shim

import (
	"fmt"
	"os"
	"strings"
)

// Caller names the process that ran the shim (its parent), e.g. helmfile,
// helmsman or bash, for the release description: Linux's /proc tells the
// name; elsewhere, or when it cannot be read, the process id.
func Caller(ppid int) string {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid)); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" {
			return name
		}
	}
	return fmt.Sprintf("process %d", ppid)
}
