// The control-plane commands build against k8s.io/kubernetes, which must stay
// out of the product module; this go.mod fences them off. scripts/build-controlplane.sh
// copies the sources into a scratch module pinned to the requested version.
module safe-upgrade.local/controlplane

go 1.26.0
