//go:build !unix

package inputfile

// openFlags: the type is checked before opening where O_NONBLOCK does not
// exist.
const openFlags = 0
