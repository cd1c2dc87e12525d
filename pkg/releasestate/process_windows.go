//go:build windows

package releasestate

// processRunning cannot tell on Windows without opening the process, which
// another user's process refuses: a holder is never said to be gone there.
func processRunning(int) bool { return true }
