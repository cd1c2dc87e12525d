package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Stats says where a plan's time went and how its updates were predicted:
// derived without a dry-run, or sent to the server and why (--debug prints
// them). A nil *Stats counts nothing.
type Stats struct {
	// Requests, when set, counts the requests sent so far.
	Requests func() int64

	mu      sync.Mutex
	Derived int
	// Asked counts the updates sent as dry-runs, by why they could not be
	// derived.
	Asked map[string]int
	// DryRuns counts the dry-run requests sent (creates, patches, applies;
	// a conflicting apply is sent twice, unforced and forced).
	DryRuns int
	// Live is the bulk read of the live objects (LISTs); Objects the pass
	// over each object (the GETs the LISTs did not cover, the predictions,
	// the classifications), wall clock, with the requests each sent.
	Live, Objects                time.Duration
	LiveRequests, ObjectRequests int64
	// Predict and Classify are the time spent predicting (dry-runs or
	// derivations) and classifying, summed over the objects evaluated
	// concurrently.
	Predict, Classify time.Duration
}

// requests is the request count now (0 when not counted).
func (s *Stats) requests() int64 {
	if s == nil || s.Requests == nil {
		return 0
	}
	return s.Requests()
}

// stage names a pass of the plan or a kind of work in it.
type stage int

const (
	stageLive stage = iota
	stageObjects
	stagePredict
	stageClassify
)

// timed runs one of the plan's passes (stageLive, stageObjects) and keeps
// its wall clock and requests.
func (s *Stats) timed(st stage, run func()) {
	if s == nil {
		run()
		return
	}
	start, before := time.Now(), s.requests()
	run()
	took, requests := time.Since(start), s.requests()-before
	if st == stageLive {
		s.Live, s.LiveRequests = took, requests
	} else {
		s.Objects, s.ObjectRequests = took, requests
	}
}

// add adds the time since start to stagePredict's or stageClassify's sum.
func (s *Stats) add(st stage, start time.Time) {
	s.locked(func() {
		if st == stagePredict {
			s.Predict += time.Since(start)
		} else {
			s.Classify += time.Since(start)
		}
	})
}

// derived counts an update derived without a dry-run, dryRun a dry-run
// request sent, asked an update sent to the server and why.
func (s *Stats) derived() { s.locked(func() { s.Derived++ }) }
func (s *Stats) dryRun()  { s.locked(func() { s.DryRuns++ }) }
func (s *Stats) asked(why string) {
	s.locked(func() {
		if s.Asked == nil {
			s.Asked = map[string]int{}
		}
		s.Asked[why]++
	})
}

// locked counts under the lock: the objects are evaluated concurrently.
// A nil *Stats counts nothing.
func (s *Stats) locked(count func()) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	count()
}

// String is one line: derived and asked counts, the reasons for asking most
// frequent first.
func (s *Stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, n := range s.Asked {
		total += n
	}
	whys := slices.Collect(maps.Keys(s.Asked))
	slices.SortFunc(whys, func(a, b string) int {
		if d := s.Asked[b] - s.Asked[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(whys))
	for _, w := range whys {
		parts = append(parts, fmt.Sprintf("%d %s", s.Asked[w], w))
	}
	out := fmt.Sprintf("%d update(s) derived without a dry-run, %d sent to the server", s.Derived, total)
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, "; ") + ")"
	}
	return out + fmt.Sprintf("; %d dry-run request(s)", s.DryRuns)
}
