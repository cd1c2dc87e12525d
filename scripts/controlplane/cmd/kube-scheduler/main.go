// Command kube-scheduler is the upstream scheduler: kwok plays the kubelets,
// but binding pods to the fake Nodes (and leaving a pod that fits nowhere
// Pending/Unschedulable with the scheduler's message) is the scheduler's job.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
