package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Environment variables the shim reads.
const (
	// HelmEnv names the real helm explicitly (instead of the next helm on PATH).
	HelmEnv = "SAFE_UPGRADE_HELM"
	// GuardEnv carries the process id that handed a command to the real
	// helm. exec keeps the process id, so a "real helm" that turns out to be
	// the shim again (a copy, a wrapper script that calls it) finds its own
	// id there and stops instead of replacing itself forever.
	GuardEnv = "SAFE_UPGRADE_SHIM_PID"
)

// ErrNoRealHelm is returned when no helm other than the shim is found.
var ErrNoRealHelm = errors.New("no real helm found; set " + HelmEnv + " to the path of Helm's own binary (helm v3 or v4), or put it on PATH after the shim")

// Lookup describes where to look for the real helm.
type Lookup struct {
	// Self is the shim's own executable (os.Executable).
	Self string
	// Tool is the full tool's executable ("" when unknown): never the
	// real helm either.
	Tool string
	// PPID is the parent's process id, where the search for the real helm
	// running above this process starts (0: no search).
	PPID int
	// Explicit is SAFE_UPGRADE_HELM ("" when unset).
	Explicit string
	// Path is PATH.
	Path string
}

// RealHelm returns the path of the real helm: Explicit when set, else the
// first helm on Path that is not the shim's own file (compared as files,
// after resolving symbolic links, so a link to the shim or a hard link is
// skipped). A real helm that would run the shim again is an error saying
// what was found (loopError): the tool's own file, a script naming the
// shim, or a helm already running several times above this process.
func (l Lookup) RealHelm() (string, error) {
	self, err := statResolved(l.Self)
	if err != nil {
		return "", fmt.Errorf("the shim's own executable %s: %w", l.Self, err)
	}
	if l.Explicit != "" {
		fi, err := statResolved(l.Explicit)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", HelmEnv, l.Explicit, err)
		}
		if os.SameFile(fi, self) {
			return "", fmt.Errorf("%s=%s is this shim, not Helm: %w", HelmEnv, l.Explicit, ErrNoRealHelm)
		}
		if err := l.loopError(HelmEnv+"="+l.Explicit, l.Explicit); err != nil {
			return "", err
		}
		return l.Explicit, nil
	}
	name := Name
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	for _, dir := range filepath.SplitList(l.Path) {
		if dir == "" {
			dir = "." // an empty PATH entry is the working directory, as for the shell
		}
		candidate := filepath.Join(dir, name)
		fi, err := statResolved(candidate)
		if err != nil || fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0) {
			continue
		}
		if os.SameFile(fi, self) {
			continue
		}
		if err := l.loopError("the helm on PATH "+candidate, candidate); err != nil {
			return "", err
		}
		return candidate, nil
	}
	return "", ErrNoRealHelm
}

// statResolved stats path after resolving its symbolic links.
func statResolved(path string) (os.FileInfo, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	return os.Stat(resolved)
}

// Looped reports whether this process was started by handing a command to
// the real helm from this very process (see GuardEnv): the real helm was
// the shim again.
func Looped(guard string, pid int) bool {
	return guard != "" && guard == fmt.Sprint(pid)
}
