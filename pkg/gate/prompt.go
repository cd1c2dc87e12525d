package gate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Prompter asks a person a question on a terminal.
type Prompter interface {
	// Input shows prompt and returns the line typed, without its newline.
	Input(prompt string) (string, error)
}

// LinePrompter reads answers line by line from In and writes prompts to Out.
type LinePrompter struct {
	in  *bufio.Reader
	out io.Writer
}

// NewLinePrompter returns a prompter on in and out (the terminal).
func NewLinePrompter(in io.Reader, out io.Writer) *LinePrompter {
	return &LinePrompter{in: bufio.NewReader(in), out: out}
}

// Input implements Prompter. End of input is an empty answer.
func (p *LinePrompter) Input(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	line, err := p.in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// Confirm lists the unacknowledged destructive changes and asks the person
// to type the release name; anything else declines. On yes the changes are
// marked acknowledged (via "prompt").
func Confirm(p Prompter, out io.Writer, release string, d *Decision) (bool, error) {
	what := "upgrade" // an install is planned as helm upgrade --install
	if d.Operation == plan.OperationRollback || d.Operation == plan.OperationUninstall {
		what = string(d.Operation)
	}
	fmt.Fprintf(out, "\nThis %s makes %d destructive change(s) that nobody acknowledged:\n", what, len(d.Unacked))
	for _, c := range d.Unacked {
		fmt.Fprintf(out, "  - %s %s\n", c.Verdict(), c.ID)
		for _, r := range c.Reasons {
			if r.Path == "" {
				fmt.Fprintf(out, "      %s\n", r.Message)
			} else {
				fmt.Fprintf(out, "      %s: %s\n", r.Path, r.Message)
			}
		}
	}
	ok, err := ConfirmRelease(p, release, "apply them")
	if err != nil || !ok {
		return false, err
	}
	for _, c := range d.Unacked {
		c.Acknowledged = true
		c.AckedBy = "prompt"
	}
	d.Unacked = nil
	return true, nil
}

// ConfirmRelease asks the person to type the release name to do what
// (e.g. "apply them"); anything else declines.
func ConfirmRelease(p Prompter, release, what string) (bool, error) {
	answer, err := p.Input(fmt.Sprintf("Type the release name (%s) to %s; anything else aborts: ", release, what))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(answer) == release, nil
}
