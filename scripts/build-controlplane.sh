#!/usr/bin/env bash
# Builds etcd, the Kubernetes binaries in KUBE_COMPONENTS (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl by default), kwok (the fake
# kubelets) and the helm CLIs (v3 and v4) from the Go module proxy into
# .cache/bin/<name>-<version>/. A binary already in the cache is not rebuilt.
# Nothing is downloaded as a prebuilt binary.
#
# The Kubernetes binaries are built by one `go build` (their packages are
# compiled once and linked in parallel), stripped; etcd joins that build when
# the Kubernetes release's own go.mod requires ETCD_VERSION's client, so the
# dependencies they share (grpc, otel, protobuf, the etcd client...) compile
# once. Each build says
# what it builds, how long a cold cache takes on 2 cores, and how far it is.
#
# Usage: scripts/build-controlplane.sh [etcd|kubernetes|kwok|helm3|helm4|helm|demo|all]...
#   kwok: only when KUBE_COMPONENTS lists kube-scheduler (pods run only then)
#   demo: what scripts/demo.sh needs (etcd, kubernetes, kwok, helm v3)
#   all:  what the tests need (demo plus helm v4)
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
  lock_build build "the control plane"
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
  local dir; dir="$(scratch_module "etcd-$ETCD_VERSION")"
  mkdir -p "$dir/etcd"
  cp "$ROOT/scripts/controlplane/cmd/etcd/main.go" "$dir/etcd/"
  building "etcd $ETCD_VERSION" 2 build_etcd_in "$dir" "$out"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

build_etcd_in() (
  local dir=$1 out=$2
  cd "$dir"
  go mod init safe-upgrade.local/etcd >/dev/null 2>&1
  quietly go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  quietly go mod tidy
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" ./etcd
)

# staging_replaces prints "-replace=MOD=MOD@v0.Y.Z" for every staging module of
# k8s.io/kubernetes: its go.mod points them at ./staging, which a dependent
# module cannot use, so we pin the published copies of the same release.
staging_replaces() {
  local gomod=$1 minor_version=$2
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod" |
    while read -r mod; do echo "-replace=$mod=$mod@$minor_version"; done
}

# tool_module_version MOD prints the version of MOD the tool's go.mod requires.
tool_module_version() {
  sed -n "s#^[[:space:]]*\(require[[:space:]]*\)\{0,1\}$1 \(v[^ ]*\).*#\2#p" "$ROOT/go.mod" | head -1
}

# kube_missing prints the KUBE_COMPONENTS not yet in the cache.
kube_missing() {
  local out c; out="$(kube_bin_dir)"
  for c in $KUBE_COMPONENTS; do [[ -x "$out/$c" ]] || echo "$c"; done
}

# kube_gomod prints the path of k8s.io/kubernetes@KUBE_VERSION's go.mod,
# downloading it if needed.
kube_gomod() {
  local gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [[ -f "$gomod" ]] || die "cannot download k8s.io/kubernetes@$KUBE_VERSION"
  echo "$gomod"
}

# etcd_joins_kubernetes: true when etcd is not cached yet and the Kubernetes
# release requires ETCD_VERSION's client: then the etcd server builds inside
# the Kubernetes module, in the same go build, at no change of any version
# the API server is built with. (The older minor of make test-compat requires
# an older client: there etcd, cached already, builds on its own if at all.)
etcd_joins_kubernetes() {
  has_component kube-apiserver && ! etcd_cached &&
    [[ "$(sed -n 's#^[[:space:]]*go.etcd.io/etcd/client/v3 \(v[^ ]*\).*#\1#p' "$(kube_gomod)" | head -1)" == "$ETCD_VERSION" ]]
}

build_kubernetes() {
  local out; out="$(kube_bin_dir)"
  local c
  for c in $KUBE_COMPONENTS; do
    [[ -f "$ROOT/scripts/controlplane/cmd/$c/main.go" ]] ||
      die "KUBE_COMPONENTS names $c; known: $(ls "$ROOT/scripts/controlplane/cmd" | grep -v etcd | tr '\n' ' ')"
  done
  [[ -z "$(kube_missing)" ]] && ! etcd_joins_kubernetes && return 0
  lock_cache
  local missing; missing="$(kube_missing | tr '\n' ' ')"
  etcd_joins_kubernetes && missing+="etcd "
  [[ -z "$missing" ]] && return 0
  local dir; dir="$(scratch_module "kubernetes-$KUBE_VERSION")"
  for c in $missing; do
    mkdir -p "$dir/$c"
    cp "$ROOT/scripts/controlplane/cmd/$c/main.go" "$dir/$c/"
  done
  # Minutes on a cold cache, 2 cores: the API server is most of it.
  local cold=0 what
  [[ " $missing " == *" kube-apiserver "* ]] && cold=$((cold + 5))
  [[ " $missing " == *" kube-controller-manager "* ]] && cold=$((cold + 2))
  [[ " $missing " == *" kube-scheduler "* ]] && cold=$((cold + 1))
  [[ " $missing " == *" kubectl "* ]] && cold=$((cold + 1))
  what="$(kube_missing | tr '\n' ' ')"
  what="${what:+${what}$KUBE_VERSION}"
  if [[ " $missing " == *" etcd "* ]]; then
    cold=$((cold + 1))
    what="${what:+$what and }etcd $ETCD_VERSION"
  fi
  building "$what" "$cold" build_kubernetes_in "$dir" "$out" "$missing"
  mkdir -p "$out"
  for c in $missing; do
    if [[ "$c" == etcd ]]; then
      local etcd_out; etcd_out="$(etcd_bin_dir)"
      rm -rf "$etcd_out"
      mkdir -p "$etcd_out"
      mv "$out.tmp/etcd" "$etcd_out/etcd"
    else
      mv "$out.tmp/$c" "$out/$c"
    fi
  done
  rm -rf "$out.tmp"
}

build_kubernetes_in() (
  local dir=$1 out=$2 missing=$3
  local ver=${KUBE_VERSION#v}
  local major=${ver%%.*} rest=${ver#*.}
  local minor=${rest%%.*}
  cd "$dir"
  kube_module "$missing"
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  local c pkgs=()
  for c in $missing; do pkgs+=("./$c"); done
  # One invocation: shared packages compiled once, binaries linked in parallel.
  # No -trimpath: the tool and helm are built without it, and the flag is part
  # of every package's build-cache key.
  go build -ldflags "$ldflags" -o "$out.tmp/" "${pkgs[@]}"
)

# kube_module COMPONENTS: in the current folder (holding the component
# mains), a go.mod that builds them against k8s.io/kubernetes@KUBE_VERSION
# (and the etcd server when COMPONENTS lists etcd).
kube_module() {
  local components=$1
  local ver=${KUBE_VERSION#v}
  local rest=${ver#*.}
  local staging="v0.${rest}"
  if [[ "$(tool_module_version k8s.io/apimachinery)" == "$staging" ]]; then
    # The tool uses this release's client libraries: start from its go.mod, so
    # every package both build (client-go, api, apimachinery, kubectl's
    # libraries, grpc, otel...) is the same version, hence the same build-cache
    # entry, compiled once for the tool, the control plane and helm. tidy
    # keeps the selected versions of what remains in use.
    cp "$ROOT/go.mod" "$ROOT/go.sum" .
    go mod edit -module safe-upgrade.local/kubernetes
  else
    go mod init safe-upgrade.local/kubernetes >/dev/null 2>&1
  fi
  local gomod; gomod="$(kube_gomod)"
  # shellcheck disable=SC2046
  go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION" $(staging_replaces "$gomod" "$staging")
  if [[ " $components " == *" etcd "* ]]; then
    go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  fi
  quietly go mod tidy
}

kwok_cached() { [[ -x "$(kwok_bin_dir)/kwok" ]]; }

# build_kwok builds kwok's controller (it plays the kubelets of fake Nodes)
# inside the module the Kubernetes binaries build in, plus kwok: kwok then
# compiles against the very client-go, apimachinery, otel and grpc packages
# they do (kwok's own go.mod asks for older ones, which Go's minimal version
# selection lifts), so on top of the Kubernetes build it compiles only its
# own packages: measured cold, 43 CPU-seconds, 52 s on 2 cores (see
# docs/development.md).
build_kwok() {
  has_component kube-scheduler || return 0
  local out; out="$(kwok_bin_dir)"
  kwok_cached && return 0
  lock_cache
  kwok_cached && return 0
  local dir; dir="$(scratch_module "kwok-$KWOK_VERSION")"
  # The scheduler's main keeps k8s.io/kubernetes, and so its versions, in
  # the module graph.
  mkdir -p "$dir/kube-scheduler"
  cp "$ROOT/scripts/controlplane/cmd/kube-scheduler/main.go" "$dir/kube-scheduler/"
  building "kwok $KWOK_VERSION" 1 build_kwok_in "$dir" "$out"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

build_kwok_in() (
  local dir=$1 out=$2
  cd "$dir"
  kube_module ""
  quietly go get "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  go build -ldflags "-s -w" -o "$out.tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
)

# Helm is built without -trimpath, like the tool (make build) and its tests.
# When the tool's go.mod requires this helm release, helm is built inside a
# copy of it: helm then compiles against the very module versions the tool
# does, so the k8s.io and Helm SDK packages are compiled once for all of them
# (`go install helm@version` would pick helm's own, older, versions of them).
build_helm() {
  local version=$1 major=${1%%.*}
  local out; out="$(helm_bin_dir "$version")"
  [[ -x "$out/helm" ]] && return 0
  lock_cache
  [[ -x "$out/helm" ]] && return 0
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  if [[ "$(tool_module_version "helm.sh/helm/$major")" == "$version" ]]; then
    local dir; dir="$(scratch_module "helm-$version")"
    building "helm $version" 2 build_helm_in "$dir" "$out" "$major" "$version"
  else
    building "helm $version" 2 \
      env GOBIN="$out.tmp" go install -ldflags "-s -w" "helm.sh/helm/$major/cmd/helm@$version"
  fi
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

build_helm_in() (
  local dir=$1 out=$2 major=$3 version=$4
  cd "$dir"
  cp "$ROOT/go.mod" "$ROOT/go.sum" .
  go mod edit -module safe-upgrade.local/helm
  # Adds what helm's command needs beyond the SDK packages the tool imports.
  quietly go get "helm.sh/helm/$major/cmd/helm@$version"
  go build -ldflags "-s -w" -o "$out.tmp/helm" "helm.sh/helm/$major/cmd/helm"
)

# build_beside CMD BG...: runs the build functions BG, in order, in the
# background while CMD runs, then waits for both. The Kubernetes build does not
# keep 2 cores busy all along (long chains of dependent packages, then the
# links), and helm's build, mostly a link of packages the tool's build has
# compiled, fills the gaps.
build_beside() {
  local main=$1 pid rc=0; shift
  # Locked before the fork, so both sides build under the one lock; a warm
  # cache takes no lock (parallel test binaries ask for the binaries too).
  demo_cached || lock_cache
  ( for f in "$@"; do "$f"; done ) &
  pid=$!
  "$main" || rc=$?
  wait "$pid" || die "building $* failed"
  return "$rc"
}

demo_cached() {
  etcd_cached && [[ -z "$(kube_missing)" && -x "$(helm_bin_dir "$HELM3_VERSION")/helm" ]] &&
    { kwok_cached || ! has_component kube-scheduler; }
}

build_helm3() { build_helm "$HELM3_VERSION"; }
build_helm4() { build_helm "$HELM4_VERSION"; }

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    etcd) build_etcd ;;  # on its own: name kubernetes first to share its build
    kubernetes) build_kubernetes ;;
    kwok) build_kwok ;;
    helm3) build_helm3 ;;
    helm4) build_helm4 ;;
    helm) build_helm3; build_helm4 ;;
    # demo.sh has built the tool, so helm's packages are in the build cache
    # and its build (a link) can go beside the Kubernetes one too. etcd
    # first joins the Kubernetes build; build_etcd after it only builds an
    # etcd that could not join (then on its own). kwok comes after the
    # Kubernetes build: it reuses most of its packages.
    demo) build_beside build_kubernetes build_helm3; build_etcd; build_kwok ;;
    all) build_kubernetes; build_etcd; build_kwok; build_helm3; build_helm4 ;;
    *) die "unknown target $t (want etcd, kubernetes, kwok, helm3, helm4, helm, demo or all)" ;;
  esac
done
