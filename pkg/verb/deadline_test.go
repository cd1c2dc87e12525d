package verb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// hungServer is an API server that never answers /version (as one stopped
// with SIGSTOP: the connection is accepted, no answer comes) until the
// client gives up, and answers /healthz at once. A client without a bound
// waits for the fallback (a minute) and then gets an answer, which the
// tests below refuse: no test waits on it when the bound works.
func hungServer(t *testing.T) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Minute):
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(server.Close)
	return writeKubeconfig(t, server.URL)
}

// TestRequestTimeout: every client of a run, those Helm builds from the
// getter included, ends a request the server does not answer after
// RequestTimeout (--timeout).
func TestRequestTimeout(t *testing.T) {
	c := testConfig(t, hungServer(t), nil)
	c.RequestTimeout = 200 * time.Millisecond
	helms, err := c.Settings.RESTClientGetter().ToRESTConfig() // what Helm's SDK builds its clients from
	if err != nil {
		t.Fatal(err)
	}
	ours, err := c.restConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range map[string]*rest.Config{"Helm's": helms, "the planner's": ours} {
		if rc.Timeout != c.RequestTimeout {
			t.Errorf("%s client: timeout %s, want %s", name, rc.Timeout, c.RequestTimeout)
		}
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Discovery().ServerVersion(); err == nil {
			t.Errorf("%s client: a request the server did not answer succeeded", name)
		}
	}
}

// TestStepDeadline: while a step's deadline is set (boundBy), every request
// of the run ends at it, also one whose caller passes no context and whose
// client has no timeout; once the step is over, requests are not bounded
// by it any more.
func TestStepDeadline(t *testing.T) {
	c := testConfig(t, hungServer(t), nil)
	rc, err := c.Settings.RESTClientGetter().ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc) // no RequestTimeout
	if err != nil {
		t.Fatal(err)
	}
	restore := c.boundBy(time.Now().Add(200 * time.Millisecond))
	_, err = client.Discovery().ServerVersion()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("within the step: %v, want the step's deadline exceeded", err)
	}
	restore()
	time.Sleep(300 * time.Millisecond) // past the step's deadline
	body, err := client.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(context.Background())
	if err != nil || string(body) != "ok" {
		t.Errorf("after the step: %q, %v; want an answer", body, err)
	}
}

// TestTimedOut: an error from a request past its deadline or its client's
// timeout says first that the API server did not answer within --timeout;
// any other error is left as it is.
func TestTimedOut(t *testing.T) {
	c := &Config{RequestTimeout: 5 * time.Second}
	netTimeout := &url.Error{Op: "Get", URL: "https://x/version", Err: timeoutErr{}}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("rendering: %w", context.DeadlineExceeded), "the API server did not answer within --timeout 5s: rendering: context deadline exceeded"},
		{fmt.Errorf("reading: %w", netTimeout), "the API server did not answer within --timeout 5s: reading: Get \"https://x/version\": i/o timeout"},
		{errors.New("forbidden"), "forbidden"},
		{nil, ""},
	} {
		got := c.timedOut(tt.err)
		if fmt.Sprint(got) != tt.want && !(got == nil && tt.want == "") {
			t.Errorf("timedOut(%v) = %v, want %s", tt.err, got, tt.want)
		}
		if tt.err != nil && !errors.Is(got, tt.err) {
			t.Errorf("timedOut(%v) does not wrap it", tt.err)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }
