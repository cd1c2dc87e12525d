package iostreams

import (
	"io"
	"sync"
)

// Locked returns w with its writes serialised: for a stream the goroutines
// of one run share (the rollout watch shows progress while Helm applies
// and logs).
func Locked(w io.Writer) io.Writer { return &lockedWriter{w: w} }

// lockedWriter serialises the writes to w of the goroutines that share it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
