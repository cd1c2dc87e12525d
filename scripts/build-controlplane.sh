#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kubectl and the helm
# CLIs (v3 and v4) from the Go module proxy into .cache/bin/<name>-<version>/.
# A binary already in the cache is not rebuilt. Nothing is downloaded as a
# prebuilt binary.
#
# Usage: scripts/build-controlplane.sh [etcd|kubernetes|helm|all]...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# lock_cache serialises builds: parallel test binaries and the demo may all ask
# for the same binaries, and two builds would share the scratch and .tmp dirs.
# Each build function calls it once it knows it must build, then checks the
# cache again (another process may have built it meanwhile).
LOCKED=
lock_cache() {
  [[ -n "$LOCKED" ]] && return 0
  LOCKED=1
  mkdir -p "$CACHE_DIR"
  if ! command -v flock >/dev/null; then
    log "flock not found: not guarding against a concurrent build"
    return 0
  fi
  exec 9>"$CACHE_DIR/build.lock"
  if ! flock -n 9; then
    log "waiting for another build of the control plane to finish"
    flock 9
  fi
}

# scratch_module NAME: prints a fresh, empty folder under the cache where a
# throwaway go.mod pins what one build needs.
scratch_module() {
  local name=$1
  local dir="$CACHE_DIR/src/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "$dir"
}

etcd_cached() { [[ -x "$(etcd_bin_dir)/etcd" ]]; }

build_etcd() {
  local out; out="$(etcd_bin_dir)"
  etcd_cached && return 0
  lock_cache
  etcd_cached && return 0
  log "building etcd $ETCD_VERSION"
  local dir; dir="$(scratch_module "etcd-$ETCD_VERSION")"
  mkdir -p "$dir/etcd"
  cp "$ROOT/scripts/controlplane/cmd/etcd/main.go" "$dir/etcd/"
  (
    cd "$dir"
    go mod init safe-upgrade.local/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    go mod tidy >/dev/null
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    go build -trimpath -o "$out.tmp/etcd" ./etcd
  )
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

# staging_replaces prints "-replace=MOD=MOD@v0.Y.Z" for every staging module of
# k8s.io/kubernetes: its go.mod points them at ./staging, which a dependent
# module cannot use, so we pin the published copies of the same release.
staging_replaces() {
  local gomod=$1 minor_version=$2
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod" |
    while read -r mod; do echo "-replace=$mod=$mod@$minor_version"; done
}

kubernetes_cached() {
  local out; out="$(kube_bin_dir)"
  [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kubectl" ]]
}

build_kubernetes() {
  local out; out="$(kube_bin_dir)"
  kubernetes_cached && return 0
  lock_cache
  kubernetes_cached && return 0
  log "building kube-apiserver, kube-controller-manager and kubectl $KUBE_VERSION (cold: several minutes)"
  local ver=${KUBE_VERSION#v}
  local major=${ver%%.*} rest=${ver#*.}
  local minor=${rest%%.*}
  local staging="v0.${rest}"
  local dir; dir="$(scratch_module "kubernetes-$KUBE_VERSION")"
  for c in kube-apiserver kube-controller-manager kubectl; do
    mkdir -p "$dir/$c"
    cp "$ROOT/scripts/controlplane/cmd/$c/main.go" "$dir/$c/"
  done
  (
    cd "$dir"
    go mod init safe-upgrade.local/kubernetes >/dev/null 2>&1
    local gomod
    gomod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    [[ -f "$gomod" ]] || die "cannot download k8s.io/kubernetes@$KUBE_VERSION"
    # shellcheck disable=SC2046
    go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION" $(staging_replaces "$gomod" "$staging")
    go mod tidy >/dev/null
    local pkg=k8s.io/component-base/version
    local ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    for c in kube-apiserver kube-controller-manager kubectl; do
      go build -trimpath -ldflags "$ldflags" -o "$out.tmp/$c" "./$c"
    done
  )
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

build_helm() {
  local version=$1 major=${1%%.*}
  local out; out="$(helm_bin_dir "$version")"
  [[ -x "$out/helm" ]] && return 0
  lock_cache
  [[ -x "$out/helm" ]] && return 0
  log "building helm $version"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install "helm.sh/helm/$major/cmd/helm@$version"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    etcd) build_etcd ;;
    kubernetes) build_kubernetes ;;
    helm) build_helm "$HELM3_VERSION"; build_helm "$HELM4_VERSION" ;;
    all) build_etcd; build_kubernetes; build_helm "$HELM3_VERSION"; build_helm "$HELM4_VERSION" ;;
    *) die "unknown target $t (want etcd, kubernetes, helm or all)" ;;
  esac
done
