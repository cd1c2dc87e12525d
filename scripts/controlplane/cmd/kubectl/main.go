// Command kubectl is the upstream kubectl, used by the krew end-to-end test.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()))
}
