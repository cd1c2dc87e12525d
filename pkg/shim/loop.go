package shim

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A "real helm" that is the shim again, however indirectly, would hand the
// command back to it forever. GuardEnv catches that while the environment
// survives; these checks do not rely on it (a wrapper that runs the shim
// under `env -i`, as sudo and some CI runners do, clears it).
const (
	// scriptMax is how much of a script is read for the files it names.
	scriptMax = 64 << 10
	// ancestorsMax bounds the walk up the process tree.
	ancestorsMax = 64
	// nestingMax is how many processes above this one may run the same
	// real helm: a helm plugin calling helm nests once or twice, a loop
	// without end.
	nestingMax = 3
)

// loopError says why candidate, the real helm found through how, is the
// shim again, or returns nil.
func (l Lookup) loopError(how, candidate string) error {
	if l.Tool != "" && sameFile(candidate, l.Tool) {
		return fmt.Errorf("%s is the safe-upgrade tool (%s), not Helm: %w", how, l.Tool, ErrNoRealHelm)
	}
	if named := l.scriptNamesShim(candidate); named != "" {
		return fmt.Errorf("%s is a script that runs this shim (it names %s), so the shim would run itself without end: %w", how, named, ErrNoRealHelm)
	}
	if pids := runningAbove(candidate, l.PPID); len(pids) >= nestingMax {
		return fmt.Errorf("%s already runs in %d processes above this one (%s): the shim is running itself through it: %w", how, len(pids), strings.Join(pids, ", "), ErrNoRealHelm)
	}
	return nil
}

// scriptNamesShim returns the word of the script at path ("#!" first) that
// is the shim's or the tool's file (compared as files, links resolved), or
// "" when it names neither or is not a script.
func (l Lookup) scriptNamesShim(path string) string {
	head := readHead(path, scriptMax)
	if !bytes.HasPrefix(head, []byte("#!")) {
		return ""
	}
	words := strings.FieldsFunc(string(head), func(r rune) bool {
		return strings.ContainsRune(" \t\r\n\"'`;&|()<>={}$", r)
	})
	for _, w := range words {
		if !strings.Contains(w, "/") {
			continue
		}
		if sameFile(w, l.Self) || (l.Tool != "" && sameFile(w, l.Tool)) {
			return w
		}
	}
	return ""
}

// runningAbove returns the ancestors of the process pid (itself first)
// whose command line names the file path, as "pid N"; nothing where /proc
// is not there.
func runningAbove(path string, pid int) []string {
	var out []string
	for range ancestorsMax {
		if pid <= 1 {
			break
		}
		dir := "/proc/" + strconv.Itoa(pid)
		for _, arg := range bytes.Split(readHead(dir+"/cmdline", 4096), []byte{0}) {
			if len(arg) > 0 && bytes.ContainsRune(arg, '/') && sameFile(string(arg), path) {
				out = append(out, "pid "+strconv.Itoa(pid))
				break
			}
		}
		pid = parentOf(dir + "/stat")
	}
	return out
}

// parentOf reads the parent's process id from a /proc/PID/stat file (0
// when it cannot): the fourth field, after the command name in
// parentheses, which may itself hold spaces and parentheses.
func parentOf(stat string) int {
	s := string(readHead(stat, 1024))
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// readHead returns up to max bytes from the start of the regular file at
// path (nothing for anything else: a named pipe is never waited on).
func readHead(path string, max int64) []byte {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(io.LimitReader(f, max))
	return buf.Bytes()
}

// sameFile reports whether a and b are the same file, links resolved.
func sameFile(a, b string) bool {
	fa, err := statResolved(a)
	if err != nil {
		return false
	}
	fb, err := statResolved(b)
	return err == nil && os.SameFile(fa, fb)
}
