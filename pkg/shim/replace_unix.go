//go:build !windows

package shim

import "syscall"

// Replace replaces the process with path (execve: same process id, streams,
// environment handling and exit code as if path had been run); it returns
// only when it failed.
func Replace(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}
