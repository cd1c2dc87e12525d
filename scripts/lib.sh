# Shared settings for the project's scripts: versions and the cache layout.
# Every binary the tests need is built from the Go module proxy and cached
# under .cache/ (git-ignored), keyed by version, so a second build is instant.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${SAFE_UPGRADE_CACHE:-$ROOT/.cache}"

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
HELM3_VERSION="${HELM3_VERSION:-v3.22.0}"
HELM4_VERSION="${HELM4_VERSION:-v4.3.1}"

kube_bin_dir() { echo "$CACHE_DIR/bin/kubernetes-$KUBE_VERSION"; }
etcd_bin_dir() { echo "$CACHE_DIR/bin/etcd-$ETCD_VERSION"; }
helm_bin_dir() { echo "$CACHE_DIR/bin/helm-$1"; }

log() { echo "==> $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }
