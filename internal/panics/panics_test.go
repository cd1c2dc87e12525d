package panics

import (
	"errors"
	"strings"
	"testing"
)

func TestCatch(t *testing.T) {
	f := func() (err error) {
		defer Catch(&err)
		var m map[string]int
		m["x"] = 1 // panics
		return nil
	}
	err := f()
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "internal error: assignment to entry in nil map") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(string(pe.Stack), "TestCatch") {
		t.Errorf("want a one-line error and the stack apart: %q", err)
	}
	multi := New("first line\nsecond line")
	if multi.Error() != "internal error: first line" {
		t.Errorf("got %q", multi.Error())
	}
}
