// Package iostreams holds the command's standard streams and what is known
// about them (terminals, colour), injected so tests can drive prompts and
// capture every output format (after the GitHub CLI's pkg/iostreams).
package iostreams

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Streams are the command's I/O, injected so tests can drive prompts and
// capture every output format. Report goes to Out; progress and prompts to ErrOut.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTTY and OutTTY say whether In and Out are terminals: prompts need the
	// first, colour the second.
	InTTY  bool
	OutTTY bool
	// ErrTTY says whether ErrOut is a terminal: progress lines need it.
	ErrTTY bool
	// NoColor is set from the NO_COLOR convention.
	NoColor bool
}

// System returns the process's standard streams with TTY detection.
func System() Streams {
	_, noColor := os.LookupEnv("NO_COLOR")
	return Streams{
		In:      os.Stdin,
		Out:     os.Stdout,
		ErrOut:  os.Stderr,
		InTTY:   term.IsTerminal(int(os.Stdin.Fd())),
		OutTTY:  term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY:  term.IsTerminal(int(os.Stderr.Fd())),
		NoColor: noColor,
	}
}

// CanPrompt reports whether a person can answer a question: never without a
// terminal on both ends.
func (s Streams) CanPrompt() bool { return s.InTTY && s.OutTTY }

// Color reports whether output to Out may be coloured.
func (s Streams) Color() bool { return s.OutTTY && !s.NoColor }
