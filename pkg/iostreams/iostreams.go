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
	// Dumb: TERM=dumb, a terminal that cannot move its cursor.
	Dumb bool
	// ErrSize reports ErrOut's terminal's columns and rows now (0 when
	// unknown); nil when none is known.
	ErrSize func() (cols, rows int)
}

// System returns the process's standard streams with TTY detection.
func System() Streams {
	_, noColor := os.LookupEnv("NO_COLOR")
	errFd := int(os.Stderr.Fd())
	errTTY := term.IsTerminal(errFd)
	return Streams{
		In:      os.Stdin,
		Out:     os.Stdout,
		ErrOut:  os.Stderr,
		InTTY:   term.IsTerminal(int(os.Stdin.Fd())),
		OutTTY:  term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY:  errTTY,
		NoColor: noColor,
		// A console that cannot take escape sequences is dumb too.
		Dumb: os.Getenv("TERM") == "dumb" || errTTY && !enableVT(os.Stderr),
		ErrSize: func() (int, int) {
			cols, rows, err := term.GetSize(errFd)
			if err != nil {
				return 0, 0
			}
			return cols, rows
		},
	}
}

// CanRedraw reports whether progress on ErrOut may be redrawn in place:
// a terminal that moves its cursor, and no NO_COLOR, whose users ask for
// plain output.
func (s Streams) CanRedraw() bool { return s.ErrTTY && !s.Dumb && !s.NoColor }

// CanPrompt reports whether a person can answer a question: never without a
// terminal on both ends.
func (s Streams) CanPrompt() bool { return s.InTTY && s.OutTTY }

// Color reports whether output to Out may be coloured.
func (s Streams) Color() bool { return s.OutTTY && !s.NoColor }
