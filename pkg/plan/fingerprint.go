package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// Fingerprint hashes the exact destructive change: object identity, action,
// class, and each reason's path with its live and predicted value (and,
// for a server-side apply conflict, the field's owner). An
// acknowledgement carrying it stops counting as soon as any of these differ.
func Fingerprint(c Change) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", c.APIVersion, c.ID, c.Action, c.Class)
	for _, r := range c.Reasons {
		_, _ = io.WriteString(h, r.Path+"\x00"+r.Before+"\x00"+r.After+"\n")
		if r.Manager != "" {
			// The same field taken from another owner is another change.
			_, _ = io.WriteString(h, "manager\x00"+r.Manager+"\n")
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
