package shim

import (
	"errors"
	"os"
	"os/exec"
)

// Replace runs path as a child with this process's streams and exits with
// its exit code: Windows cannot replace a process. It returns only when path
// could not be started.
func Replace(path string, argv, env []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if code := exitErr.ExitCode(); code > 0 {
			os.Exit(code)
		}
		os.Exit(1)
	case err != nil:
		return err
	}
	os.Exit(0)
	return nil
}
