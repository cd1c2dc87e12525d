package savedplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// withRestart adds --restart-stale to flags (ApplyFlags) when on: a plan
// saved with it is applied with it, and one saved without it (or by a
// version that had no such flag) without it.
func withRestart(flags map[string]interface{}, on bool) map[string]interface{} {
	if on {
		flags["RestartStale"] = true
	}
	return flags
}

// restarts names the workloads p restarts after the upgrade.
func restarts(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Restarts() {
		out = append(out, c.ID.String())
	}
	return out
}

// sameRestarts refuses the saved plan when the plan made now would restart
// other workloads than the reviewed one: the apply restarts exactly those
// that were shown.
func (s *Plan) sameRestarts(p *plan.Plan) error {
	now := restarts(p)
	if slices.Equal(now, s.Restart) {
		return nil
	}
	return fmt.Errorf("saved plan is stale: it restarts [%s] after the upgrade (--restart-stale), a plan now would restart [%s]; plan again",
		strings.Join(s.Restart, ", "), strings.Join(now, ", "))
}
