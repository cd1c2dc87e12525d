package manifest

import "github.com/safe-upgrade/helm-safe-upgrade/internal/panics"

// Background is a SplitRemembering run in a goroutine of its own, for a
// caller that has other work meanwhile: a plan knows the last release's
// manifest before Helm renders the new one, and Helm's render uses one
// core.
type Background struct {
	name, manifest, namespace string
	done                      chan struct{}
	set                       *Set
	parsed                    *Parsed
	err                       error
}

// SplitInBackground starts SplitRemembering(name, manifest,
// defaultNamespace, scoper) and returns at once; Take returns its result.
// scoper must be safe for concurrent use.
func SplitInBackground(name, manifest, defaultNamespace string, scoper Scoper) *Background {
	b := &Background{name: name, manifest: manifest, namespace: defaultNamespace, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		defer panics.Catch(&b.err) // a panic in a goroutine would exit 2, the gate's code
		b.set, b.parsed, b.err = SplitRemembering(name, manifest, defaultNamespace, scoper)
	}()
	return b
}

// Take waits for the split and returns it when it is the one of name,
// manifest and defaultNamespace; ok is false otherwise, and for a nil
// Background: the caller splits as it would have. The result is handed
// over once (a second Take returns ok false), so that the Background does
// not keep the objects alive after the caller drops them.
func (b *Background) Take(name, manifest, defaultNamespace string) (set *Set, parsed *Parsed, err error, ok bool) {
	if b == nil {
		return nil, nil, nil, false
	}
	<-b.done
	if b.name != name || b.manifest != manifest || b.namespace != defaultNamespace || (b.set == nil && b.err == nil) {
		return nil, nil, nil, false
	}
	set, parsed, err = b.set, b.parsed, b.err
	b.set, b.parsed, b.err, b.manifest = nil, nil, nil, ""
	return set, parsed, err, true
}
