// Command kubectl is the upstream kubectl, used by the demo, the tests and the
// krew end-to-end test.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// As upstream's main: RunNoErrOutput leaves printing the error to CheckErr,
	// which also picks the exit code.
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
