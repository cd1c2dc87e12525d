// Command helm-safe-upgrade plans, reviews and applies Helm upgrades without
// surprises. The same binary runs as a Helm plugin (helm safe-upgrade) and,
// installed by krew as kubectl-safe_upgrade, as a kubectl plugin.
package main

import (
	"os"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/cpuprof"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/gcbudget"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/heapprof"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

// Set by the release build (-ldflags "-X main.version=... -X main.commit=...").
var (
	version = "dev"
	commit  = "none"
)

func main() {
	gcbudget.Start() // unless GOGC or GOMEMLIMIT is set
	helmsdk.InitProcess()
	streams := iostreams.System()
	build := cli.BuildInfo{Version: version, Commit: commit}
	stopCPU := cpuprof.Start(streams.ErrOut) // SAFE_UPGRADE_CPUPROFILE only
	stop := heapprof.Start(streams.ErrOut)   // SAFE_UPGRADE_HEAPPROFILE only
	code := cli.Execute(os.Args[0], os.Args[1:], streams, build)
	stop()
	stopCPU()
	os.Exit(code)
}
