//go:build windows

package iostreams

import (
	"os"

	"golang.org/x/sys/windows"
)

// enableVT turns on escape-sequence processing on f's console (Windows 10
// and later) and reports whether it is on: an older console prints the
// sequences as text.
func enableVT(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
