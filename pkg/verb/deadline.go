package verb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// stepDeadline bounds every request of a run by the deadline of the step
// it runs in, when one is set (Config.boundBy): the plan's --timeout, or the
// one fresh --timeout an apply's clean-up gets after a failure. Requests
// whose callers pass a context are bounded by it already; this also bounds
// the many that Helm's SDK sends with none (release storage, discovery,
// its kube client), so a server that stops answering ends the step at its
// deadline rather than after one rest.Config.Timeout per request.
type stepDeadline struct {
	next http.RoundTripper
	// at is the deadline in Unix nanoseconds; 0: none.
	at *atomic.Int64
}

func (s stepDeadline) RoundTrip(req *http.Request) (*http.Response, error) {
	at := s.at.Load()
	if at == 0 {
		return s.next.RoundTrip(req)
	}
	ctx, cancel := context.WithDeadline(req.Context(), time.Unix(0, at))
	resp, err := s.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return resp, err
	}
	// The body is read after RoundTrip returns: the context lives until
	// the caller closes it.
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// boundBy bounds every request of the run, Helm's included, by deadline
// until the returned function is called, which puts back the bound that
// was there before.
func (c *Config) boundBy(deadline time.Time) (restore func()) {
	if c.deadline == nil {
		return func() {}
	}
	prev := c.deadline.Swap(deadline.UnixNano())
	return func() { c.deadline.Store(prev) }
}

// boundByContext is boundBy with ctx's deadline; without one it bounds
// nothing.
func (c *Config) boundByContext(ctx context.Context) (restore func()) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return func() {}
	}
	return c.boundBy(deadline)
}

// timedOut says, in front of err, that the API server did not answer in
// time, when that is what err comes from: a request past its deadline (the
// step's or the context's) or its --timeout (rest.Config.Timeout).
func (c *Config) timedOut(err error) error {
	var timeout interface{ Timeout() bool }
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &timeout) && timeout.Timeout()) {
		return err
	}
	if c.RequestTimeout == 0 {
		return fmt.Errorf("the API server did not answer in time: %w", err)
	}
	return fmt.Errorf("the API server did not answer within --timeout %s: %w", c.RequestTimeout, err)
}
