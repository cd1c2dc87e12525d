package watch

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// problem is what is wrong with one pod, in words.
type problem struct {
	text string
	// fatal problems end the watch of their workload at once: the kubelet
	// is already backing off (an image it cannot pull, a container that
	// keeps exiting, a container it cannot create) or the pod failed. The
	// others (not scheduled yet, not ready yet) may still resolve, and are
	// the reason given when the watch times out.
	fatal bool
	// rank orders problems: the most telling one is reported.
	rank int
	// crashed is the container whose last run exited with an error (a
	// crash loop): its log says why; nil for the other problems.
	crashed *container
	// replaced: the pod is of the revision the rollout replaces, so its
	// problem is not the rollout's (see evaluate).
	replaced bool
}

// container is one container of a pod; previous: its log is that of the
// previous run (a crash loop restarted it), else of the current one.
type container struct {
	namespace, pod, name string
	previous             bool
}

// Waiting reasons of a container that the kubelet keeps retrying with a
// back-off: the pod will not become ready without a change.
var fatalWaiting = map[string]bool{
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CrashLoopBackOff":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// podProblem says what keeps pod from being ready (or completing), nil when
// nothing visible in its status does (it is ready, or just starting).
func podProblem(pod *corev1.Pod) *problem {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var found []problem
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if p := containerProblem(pod, cs); p != nil {
			found = append(found, *p)
		}
	}
	if pod.Status.Phase == corev1.PodFailed && len(found) == 0 {
		msg := pod.Status.Message
		if msg == "" {
			msg = pod.Status.Reason
		}
		found = append(found, problem{text: fmt.Sprintf("pod %s failed: %s", pod.Name, msg), fatal: true, rank: 3})
	}
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			found = append(found, problem{text: fmt.Sprintf("pod %s cannot be scheduled (Unschedulable): %s", pod.Name, schedulerReasons(c.Message)), rank: 2})
		case c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && pod.Status.Phase == corev1.PodRunning && len(found) == 0:
			found = append(found, problem{text: fmt.Sprintf("pod %s is running but not ready (readiness failing): %s", pod.Name, readyMessage(c)), rank: 1})
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].rank > found[j].rank })
	return &found[0]
}

func readyMessage(c corev1.PodCondition) string {
	if c.Message != "" {
		return c.Message
	}
	if c.Reason != "" {
		return c.Reason
	}
	return "Ready is False"
}

// containerProblem says what is wrong with one container of pod, nil when
// nothing is.
func containerProblem(pod *corev1.Pod, cs corev1.ContainerStatus) *problem {
	if w := cs.State.Waiting; w != nil {
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return &problem{
				text:  fmt.Sprintf("pod %s: image %s cannot be pulled (%s): %s", pod.Name, cs.Image, w.Reason, w.Message),
				fatal: fatalWaiting[w.Reason], rank: 5,
			}
		case "CrashLoopBackOff":
			// The count before the exit: its message is quoted last.
			return &problem{text: fmt.Sprintf("pod %s: container %s is crash-looping (CrashLoopBackOff, restarted %d time(s)): %s",
				pod.Name, cs.Name, cs.RestartCount, lastExit(cs.LastTerminationState.Terminated)), fatal: true, rank: 5,
				crashed: &container{namespace: pod.Namespace, pod: pod.Name, name: cs.Name, previous: true}}
		case "", "ContainerCreating", "PodInitializing":
			return nil
		default:
			return &problem{text: fmt.Sprintf("pod %s: container %s is waiting (%s): %s", pod.Name, cs.Name, w.Reason, w.Message),
				fatal: fatalWaiting[w.Reason], rank: 4}
		}
	}
	if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
		return &problem{text: fmt.Sprintf("pod %s: container %s %s", pod.Name, cs.Name, lastExit(t)),
			fatal: pod.Status.Phase == corev1.PodFailed, rank: 4,
			crashed: &container{namespace: pod.Namespace, pod: pod.Name, name: cs.Name}}
	}
	return nil
}

// lastExit says how a container last ended.
func lastExit(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return "last exit code unknown"
	}
	s := fmt.Sprintf("exited with code %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if m := strings.TrimSpace(t.Message); m != "" {
		s += ": " + lastLine(m)
	}
	return "last " + s
}

// lastLine is the last non-empty line of s (a termination message, a log).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Warning events that say why a pod does not start or get ready, beyond
// what its status says.
var telling = map[string]bool{
	"Unhealthy":          true, // readiness or liveness probe failed
	"FailedMount":        true,
	"FailedAttachVolume": true,
	"FailedScheduling":   true,
	"BackOff":            true,
	"Failed":             true,
}

// eventNote is the newest telling Warning event about one of pods, and
// its message as quoted there (a reason that holds it already says what
// the event does); "" when there is none.
func eventNote(events []corev1.Event, pods map[string]bool) (note, msg string) {
	var best *corev1.Event
	for i := range events {
		e := &events[i]
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "Pod" || !pods[e.InvolvedObject.Name] || !telling[e.Reason] {
			continue
		}
		if best == nil || eventTime(e).After(eventTime(best)) {
			best = e
		}
	}
	if best == nil {
		return "", ""
	}
	msg = best.Message
	if best.Reason == "FailedScheduling" {
		msg = schedulerReasons(msg)
	}
	return fmt.Sprintf("event %s on pod %s: %s", best.Reason, best.InvolvedObject.Name, msg), msg
}

// schedulerReasons is the scheduler's message of a pod it cannot place
// without what its PostFilter plugins (preemption) appended: the
// scheduler's FitError joins their message to its own after a space
// ("0/3 nodes are available: pod has unbound immediate
// PersistentVolumeClaims. not found", "…. preemption: 0/3 nodes are
// available: 3 Preemption is not helpful for scheduling."), which says
// nothing of why the pod does not fit and reads as part of the reasons.
// Another message is left as it is.
func schedulerReasons(msg string) string {
	m := fitMessage.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	return m[1]
}

// fitMessage is the scheduler's "0/N nodes are available: <reasons>."
// and what follows it; no reason holds ". " (node names, taints and
// plugin texts do not).
var fitMessage = regexp.MustCompile(`^(\d+/\d+ nodes are available:.*?\.)(?: .*)?$`)

// eventTime is when an event was last seen, from whichever field its
// reporter set.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
