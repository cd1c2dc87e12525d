// Command helm-shim is the drop-in helm (shipped as bin/helm, installed by
// `helm safe-upgrade shim install DIR`): it hands helm upgrade and helm diff
// upgrade to helm-safe-upgrade beside it and every other command to the real
// helm. It imports pkg/shim and the standard library only
// (TestDispatcherDeps), so a passed-through command starts in a few
// milliseconds: the full tool's package initialisation (Helm's SDK,
// client-go) costs hundreds.
package main

import (
	"os"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
)

func main() {
	self, _ := os.Executable()
	os.Exit(shim.Dispatcher{
		Argv: os.Args, Self: self, PID: os.Getpid(), PPID: os.Getppid(),
		Getenv: os.Getenv, Environ: os.Environ(),
		Stderr: os.Stderr, Exec: shim.Replace,
	}.Run())
}
