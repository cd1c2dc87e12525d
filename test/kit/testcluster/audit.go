package testcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AuditEvent is the part of an API server audit event (audit.k8s.io/v1) that
// tests assert on. RequestURI keeps the query, so a dry-run request shows
// "dryRun=All" there.
type AuditEvent struct {
	Verb, RequestURI, User string
	ObjectRef              struct{ Resource, Namespace, Name, APIGroup string }
	ResponseCode           int
	Stage                  string
	UserAgent              string
}

// rawAuditEvent is the JSON shape of an audit.k8s.io/v1 Event, as written by
// the log backend.
type rawAuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		APIGroup  string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditLog reads the audit log incrementally: events already parsed are kept,
// so repeated calls read only what was appended since.
type auditLog struct {
	mu      sync.Mutex
	offset  int64
	partial []byte
	events  []AuditEvent
}

const barrierPrefix = "testcluster-audit-barrier-"

var barrierSeq atomic.Int64

// AuditEvents returns the completed requests (stage ResponseComplete) in the
// audit log for which match returns true (all of them for a nil match), in
// the order the API server finished them. Every request whose response was
// received before the call is included: the call first sends a marker
// request and reads the log until the marker's event is there.
func (c *Cluster) AuditEvents(t testing.TB, match func(AuditEvent) bool) []AuditEvent {
	t.Helper()
	if c.UserCluster {
		t.Skip("needs the API server's audit log: runs on the project's own control plane only, not with " + UserClusterEnv + "=1")
	}
	if c.AuditLogPath == "" {
		t.Fatalf("testcluster: this cluster has no audit log (with %s, name a kubeconfig written by scripts/kube-up.sh)", ReuseEnv)
	}
	barrier := fmt.Sprintf("%s%d-%d", barrierPrefix, os.Getpid(), barrierSeq.Add(1))
	_, err := c.Clientset(t).CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), barrier, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("testcluster: audit marker request: want NotFound, got %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := c.audit.read(c.AuditLogPath)
		if err != nil {
			t.Fatalf("testcluster: reading the audit log: %v", err)
		}
		if seen(events, barrier) {
			var out []AuditEvent
			for _, e := range events {
				if !strings.HasPrefix(e.ObjectRef.Name, barrierPrefix) && (match == nil || match(e)) {
					out = append(out, e)
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("testcluster: the audit log %s has no event for the marker request %s after 10s", c.AuditLogPath, barrier)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func seen(events []AuditEvent, name string) bool {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].ObjectRef.Name == name {
			return true
		}
	}
	return false
}

// auditReadLimit bounds one read of the log; an audit event is a few KiB.
const auditReadLimit = 16 << 20

// read parses what was appended to the log since the last call and returns
// all ResponseComplete events so far (a snapshot the caller may keep).
func (a *auditLog) read(path string) ([]AuditEvent, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, err
	}
	// A bounded read: what is left is read by the next call, which every
	// caller makes while it waits for its barrier.
	data, err := io.ReadAll(io.LimitReader(f, auditReadLimit))
	if err != nil {
		return nil, err
	}
	a.offset += int64(len(data))
	data = append(a.partial, data...)
	end := bytes.LastIndexByte(data, '\n') + 1
	if len(data)-end > auditReadLimit {
		return nil, fmt.Errorf("%s: a line longer than %d bytes", path, auditReadLimit)
	}
	a.partial = append([]byte(nil), data[end:]...)
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var raw rawAuditEvent
		if err := json.Unmarshal(line, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if raw.Stage == "ResponseComplete" {
			a.events = append(a.events, raw.event())
		}
	}
	return a.events[:len(a.events):len(a.events)], nil
}

func (r *rawAuditEvent) event() AuditEvent {
	e := AuditEvent{Verb: r.Verb, RequestURI: r.RequestURI, User: r.User.Username, Stage: r.Stage, UserAgent: r.UserAgent}
	if o := r.ObjectRef; o != nil {
		e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name, e.ObjectRef.APIGroup = o.Resource, o.Namespace, o.Name, o.APIGroup
	}
	if r.ResponseStatus != nil {
		e.ResponseCode = r.ResponseStatus.Code
	}
	return e
}
