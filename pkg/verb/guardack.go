package verb

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// ackGuardedDeletes acknowledges to the API server's guard exactly the
// deletes the gate acknowledged that Helm is about to send (see
// guard.Acknowledge): without it the guard refuses them and Helm's run
// fails half-way. A plan without acknowledged deletes writes nothing.
// orphan says whether Helm's deletes orphan dependants.
func (c *Config) ackGuardedDeletes(ctx context.Context, p *plan.Plan, orphan bool) (*guard.Acks, error) {
	var targets []guard.AckTarget
	for _, ch := range p.Changes {
		if ch.Action != plan.ActionDelete || !ch.Destructive || !ch.Acknowledged || ch.Blocking {
			continue
		}
		targets = append(targets, guard.AckTarget{GVK: schema.FromAPIVersionAndKind(ch.APIVersion, ch.ID.Kind),
			Namespace: ch.ID.Namespace, Name: ch.ID.Name, ResourceVersion: ch.LiveResourceVersion})
	}
	if len(targets) == 0 {
		return nil, nil
	}
	acks, err := guard.Acknowledge(ctx, c.Cluster, targets, orphan)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %s; Helm was not started", p.Release.Name, p.Release.Namespace, c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
	if names := acks.Names(); len(names) > 0 {
		c.Logf("acknowledged to the guard (%s = UID): %s", guard.AckAnnotation, strings.Join(names, ", "))
	}
	return acks, nil
}

// revokeGuardAcks removes the acknowledgements after Helm failed, from the
// objects still there; it returns what was left ("" when nothing was).
func (c *Config) revokeGuardAcks(ctx context.Context, acks *guard.Acks) string {
	return c.Sanitizer.Text(acks.Revoke(context.WithoutCancel(ctx)), redact.MessageLimit)
}
