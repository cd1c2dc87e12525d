package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Decision is the gate's verdict on a plan.
type Decision struct {
	// Unacked are destructive changes nobody acknowledged (or whose ack is
	// stale); Refused are changes no ack can let through (invalid).
	Unacked []*plan.Change
	Refused []*plan.Change
	// Stale lists acks whose fingerprint no longer matches the change.
	Stale []string
	// Unused lists acks that name no destructive change.
	Unused []string
	// AckedAll names the changes let through by --ack-all-destructive.
	AckedAll []*plan.Change
	// Blockers are the plan's plan-wide blockers: no ack lets them through.
	Blockers []string
	// Operation is what the plan is of (the prompt names it).
	Operation plan.Operation
}

// Blocked reports whether the upgrade must not proceed.
func (d Decision) Blocked() bool {
	return len(d.Unacked) > 0 || len(d.Refused) > 0 || len(d.Blockers) > 0
}

// Evaluate marks acknowledged changes in p and returns the decision. An ack
// with a fingerprint counts only when it equals the change's fingerprint.
func Evaluate(p *plan.Plan, acks *Acks, ackAll bool) Decision {
	d := Decision{Blockers: p.Blockers, Operation: p.Release.Op()}
	used := make([]bool, len(acks.list))
	for i := range p.Changes {
		c := &p.Changes[i]
		if !c.Destructive {
			continue
		}
		for j, a := range acks.list {
			if !a.matches(c.ID) {
				continue
			}
			used[j] = true
			if a.Fingerprint != "" && a.Fingerprint != c.Fingerprint {
				d.Stale = append(d.Stale, fmt.Sprintf("%s: the change is now %s", a, c.Fingerprint))
				continue
			}
			if !c.Acknowledged {
				c.Acknowledged = true
				c.AckedBy = a.Via
			}
		}
		switch {
		case c.Blocking:
			c.Acknowledged = false
			d.Refused = append(d.Refused, c)
		case !c.Acknowledged && ackAll:
			c.Acknowledged = true
			c.AckedBy = "ack-all-destructive"
			d.AckedAll = append(d.AckedAll, c)
		case !c.Acknowledged:
			d.Unacked = append(d.Unacked, c)
		}
	}
	for j, a := range acks.list {
		if !used[j] {
			d.Unused = append(d.Unused, a.String())
		}
	}
	return d
}

// Messages explains the decision for stderr.
func (d Decision) Messages() []string {
	var out []string
	for _, s := range d.Stale {
		out = append(out, "warning: stale acknowledgement ignored: "+s)
	}
	for _, u := range d.Unused {
		out = append(out, "warning: acknowledgement "+u+" matches no destructive change")
	}
	for _, c := range d.AckedAll {
		out = append(out, fmt.Sprintf("WARNING: --ack-all-destructive lets through %s %s: %s", c.Class, c.ID, firstReason(c)))
	}
	for _, c := range d.Refused {
		out = append(out, fmt.Sprintf("Refused: %s cannot be acknowledged: %s", c.ID, firstReason(c)))
	}
	for _, b := range d.Blockers {
		out = append(out, "Refused: "+b+"; nothing was written")
	}
	if len(d.Unacked) > 0 {
		var flags []string
		for _, c := range d.Unacked {
			flags = append(flags, "  "+c.AckFlag())
		}
		sort.Strings(flags)
		out = append(out, fmt.Sprintf("Blocked: %d destructive change(s) not acknowledged; nothing was written.\nReview them above, then acknowledge each with:\n%s",
			len(d.Unacked), strings.Join(flags, "\n")))
	}
	return out
}

func firstReason(c *plan.Change) string {
	if len(c.Reasons) == 0 {
		return c.Verdict()
	}
	r := c.Reasons[0]
	if r.Path == "" {
		return r.Message
	}
	return r.Path + ": " + r.Message
}
