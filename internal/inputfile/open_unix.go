//go:build unix

package inputfile

import "syscall"

// openFlags makes opening a named pipe return at once instead of waiting
// for a writer (the file's type is then refused).
const openFlags = syscall.O_NONBLOCK
