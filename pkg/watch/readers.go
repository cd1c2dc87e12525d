package watch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// reader is a workload whose pods the plan leaves running while a
// ConfigMap or Secret they read changes.
type reader struct {
	id    manifest.ObjectID
	stale bool     // read at container start (else: a file the kubelet updates)
	of    []string // "ConfigMap settings"
}

// Readers checks, after the apply, the readers of the changed ConfigMaps
// and Secrets whose pods the plan does not replace (plan.SightStale, or
// plan.SightFile: the workload's template does not change, and
// --restart-stale did not restart it): one outcome per such workload, of
// its pods now running, how many started before since (the apply's
// start). A stale reader whose pods all predate the apply is as
// predicted: still on the old value. Its pods are LISTed once (through
// its selector, read from a LIST of the workload itself); a read that
// fails leaves it unknown.
func Readers(ctx context.Context, r live.Reader, p *plan.Plan, since time.Time) []plan.ObjectOutcome {
	var readers []*reader
	at := map[manifest.ObjectID]*reader{}
	for _, c := range p.Changes {
		for _, u := range c.Consumers {
			if u.Sees != plan.SightStale && u.Sees != plan.SightFile {
				continue
			}
			rd := at[u.Workload]
			if rd == nil {
				rd = &reader{id: u.Workload}
				at[u.Workload] = rd
				readers = append(readers, rd)
			}
			rd.stale = rd.stale || u.Sees == plan.SightStale
			if what := c.ID.Kind + " " + c.ID.Name; !slices.Contains(rd.of, what) {
				rd.of = append(rd.of, what)
			}
		}
	}
	out := make([]plan.ObjectOutcome, 0, len(readers))
	for _, rd := range readers {
		out = append(out, rd.check(ctx, r, since))
	}
	return out
}

// check is rd's outcome: its pods, and how many started before since.
func (rd *reader) check(ctx context.Context, r live.Reader, since time.Time) plan.ObjectOutcome {
	of := strings.Join(rd.of, ", ")
	oo := plan.ObjectOutcome{ID: rd.id, State: plan.StateCurrent, Predicted: "no pod replaced; the kubelet updates the files of " + of + " in place"}
	if rd.stale {
		oo.Predicted = "no pod replaced; running pods keep the old value of " + of + " until they restart"
	}
	pods, err := readerPods(ctx, r, rd.id)
	if err != nil {
		oo.State, oo.Reason, oo.Predicted = plan.StateUnknown, err.Error(), ""
		return oo
	}
	// Creation times are whole seconds: a pod of the apply's own second
	// is not known to predate it.
	before := since.Truncate(time.Second)
	for _, pod := range pods {
		oo.PodsBefore++
		if pod.GetCreationTimestamp().Time.Before(before) {
			oo.PodsKept++
		}
	}
	oo.Detail = fmt.Sprintf("%d pod(s) running, not replaced by the upgrade", len(pods))
	oo.AsPredicted = oo.PodsKept == oo.PodsBefore
	oo.Observed = fmt.Sprintf("%d of %d pod(s) started before the upgrade", oo.PodsKept, oo.PodsBefore)
	if rd.stale && oo.PodsKept > 0 {
		oo.Observed += ": still on the old value"
	}
	return oo
}

// readerPods are the pods of workload id now running (not being deleted):
// the Pod itself, or those its selector matches.
func readerPods(ctx context.Context, r live.Reader, id manifest.ObjectID) ([]unstructured.Unstructured, error) {
	gvr, _, err := r.Mapping(schema.GroupVersionKind{Group: id.Group, Version: "v1", Kind: id.Kind})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", id, err)
	}
	list, err := r.List(ctx, gvr, id.Namespace, metav1.ListOptions{FieldSelector: "metadata.name=" + id.Name})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", id, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("reading %s: not found", id)
	}
	if id.Kind != "Pod" || id.Group != "" {
		sel := selectorOf(&list.Items[0])
		if sel == nil {
			return nil, fmt.Errorf("reading %s: it has no pod selector", id)
		}
		if list, err = r.List(ctx, live.PodsGVR, id.Namespace, metav1.ListOptions{LabelSelector: sel.String()}); err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", id, err)
		}
	}
	var pods []unstructured.Unstructured
	for _, p := range list.Items {
		if p.GetDeletionTimestamp() == nil {
			pods = append(pods, p)
		}
	}
	return pods, nil
}
