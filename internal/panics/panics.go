// Package panics turns a panic in a goroutine into an error. Go exits with
// code 2 on a panic nobody recovers, and a recover in main does not see the
// panics of other goroutines; exit 2 is the gate's "blocked", so every
// goroutine the tool starts recovers with Catch.
package panics

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// Error is a recovered panic.
type Error struct {
	// Value is what was passed to panic.
	Value interface{}
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

// New returns the Error of a recovered value r, with the current stack
// (call it in the deferred function that recovered).
func New(r interface{}) *Error { return &Error{Value: r, Stack: debug.Stack()} }

// Error is one line: the panic's value up to its first newline.
func (e *Error) Error() string {
	msg, _, _ := strings.Cut(fmt.Sprint(e.Value), "\n")
	return "internal error: " + msg
}

// Catch, deferred, turns a panic of the calling goroutine into an *Error
// in *errp.
func Catch(errp *error) {
	if r := recover(); r != nil {
		*errp = New(r)
	}
}

// StackOf returns the stack of the panic err carries (an *Error: recovered
// by Catch, or by New in the deferred function that recovered), if it
// carries one.
func StackOf(err error) ([]byte, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Stack, true
	}
	return nil, false
}
