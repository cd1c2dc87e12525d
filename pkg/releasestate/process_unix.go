//go:build !windows

package releasestate

import (
	"errors"
	"syscall"
)

// processRunning reports whether process pid runs on this machine (signal
// 0 checks without sending; EPERM: it runs as another user).
func processRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
