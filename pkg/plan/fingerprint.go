package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Fingerprint hashes the exact destructive change: object identity, action,
// class, and each reason's path with its live and predicted value (and,
// for a server-side apply conflict, the field's owner), except the reasons
// of regenerated or ignored fields. An
// acknowledgement carrying it stops counting as soon as any of these differ.
// Secret values count only as "(sensitive)" (redact.Unkeyed): their markers
// are keyed per plan, and a fingerprint must stay the same from the
// reviewed plan to the apply without telling anything about the value.
func Fingerprint(c Change) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", c.APIVersion, c.ID, c.Action, c.Class)
	for _, r := range c.Reasons {
		if r.Regenerated || r.IgnoredBy != "" {
			continue // a new value on every render: an ack must survive it
		}
		_, _ = io.WriteString(h, r.Path+"\x00"+redact.Unkeyed(r.Before)+"\x00"+redact.Unkeyed(r.After)+"\n")
		if r.Manager != "" {
			// The same field taken from another owner is another change.
			_, _ = io.WriteString(h, "manager\x00"+r.Manager+"\n")
		}
		if r.Consumer != "" {
			// Another workload left failing is another change.
			_, _ = io.WriteString(h, "consumer\x00"+r.Consumer+"\n")
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
