#!/usr/bin/env bash
# Builds Flux's helm-controller and source-controller (make test-flux) from
# the source trees in FLUX_SRC, a folder the user or CI gives that holds
# helm-controller-<v>.tar.gz and source-controller-<v>.tar.gz or their
# unpacked trees. Neither is served whole by the Go module proxy; their own
# dependencies are. The binaries and the CRDs (config/crd/bases of each) go to
# .cache/bin/<name>-<version>/, like the control plane's; a binary already in
# the cache is not rebuilt and then FLUX_SRC is not needed. Prints the folder of
# each controller asked for on stdout (one a line).
#
# Why these versions: helm-controller v1.5.1 and later replace helm.sh/helm/v4
# with a fork the module proxy does not serve; v1.5.0 uses upstream Helm
# v4.1.1. source-controller v1.8.5 (its Flux 2.8 partner) needs a
# fluxcd/pkg/artifact the proxy refuses; v1.9.1 builds and serves the same
# source.toolkit.fluxcd.io/v1 artifacts.
#
# Usage: FLUX_SRC=DIR scripts/build-flux.sh [helm-controller|source-controller|all]...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELM_CONTROLLER_VERSION="${HELM_CONTROLLER_VERSION:-v1.5.0}"
SOURCE_CONTROLLER_VERSION="${SOURCE_CONTROLLER_VERSION:-v1.9.1}"

# build_controller NAME VERSION: .cache/bin/NAME-VERSION/{NAME,crd/}.
build_controller() {
  local name=$1 version=$2 out="$CACHE_DIR/bin/$1-$2"
  if [[ ! -x "$out/$name" ]]; then
    # Its own lock: it shares no scratch dir with the control plane.
    lock_build "build-$name" "$name"
    if [[ ! -x "$out/$name" ]]; then
      [[ -n "${FLUX_SRC:-}" ]] || die "$name $version is not built and FLUX_SRC is not set: give the folder holding $name-$version.tar.gz (or its unpacked tree), e.g. make test-flux FLUX_SRC=/path/to/flux"
      local dir="$CACHE_DIR/src/$name-$version"
      unpack_source "$FLUX_SRC" "$name" "$version" "$dir"
      [[ -d "$dir/config/crd/bases" ]] || die "$FLUX_SRC: $name-$version has no config/crd/bases"
      building "$name $version" 20 build_controller_in "$dir" "$out" "$name"
      rm -rf "$out"
      mv "$out.tmp" "$out"
    fi
  fi
  echo "$out"
}

build_controller_in() (
  local dir=$1 out=$2 name=$3
  cd "$dir"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  cp -R config/crd/bases "$out.tmp/crd"
  # The api/ folder is a separate module both controllers require by version
  # (replaced by ./api in go.mod); go build resolves it like their Makefiles.
  go build -trimpath -o "$out.tmp/$name" .
)

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    helm-controller) build_controller helm-controller "$HELM_CONTROLLER_VERSION" ;;
    source-controller) build_controller source-controller "$SOURCE_CONTROLLER_VERSION" ;;
    all)
      build_controller source-controller "$SOURCE_CONTROLLER_VERSION"
      build_controller helm-controller "$HELM_CONTROLLER_VERSION"
      ;;
    *) die "unknown target $t (want helm-controller, source-controller or all)" ;;
  esac
done
