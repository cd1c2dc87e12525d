#!/usr/bin/env bash
# Builds the release tools — goreleaser and krew — from the Go module proxy
# into .cache/bin/<name>-<version>/, like scripts/build-controlplane.sh does
# for the control plane. A binary already in the cache is not rebuilt; nothing
# is downloaded as a prebuilt binary. Prints the path of each binary asked for
# on stdout (one a line), so tests and scripts can find it.
#
# Usage: scripts/build-shiptools.sh [goreleaser|krew|all]...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v2.15.1 is the newest goreleaser that builds with this Go from the proxy.
GORELEASER_VERSION="${GORELEASER_VERSION:-v2.15.1}"
KREW_VERSION="${KREW_VERSION:-v0.4.3}"

# go_install NAME VERSION PACKAGE: go-installs PACKAGE@VERSION into
# .cache/bin/NAME-VERSION/ unless the binary NAME is there, then prints its path.
go_install() {
  local name=$1 version=$2 pkg=$3
  local out="$CACHE_DIR/bin/$name-$version"
  if [[ ! -x "$out/$name" ]]; then
    log "building $name $version from the Go module proxy"
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    GOBIN="$out.tmp" go install "$pkg@$version" ||
      die "go install $pkg@$version failed"
    [[ -x "$out.tmp/$name" ]] || die "go install $pkg@$version made no $name binary"
    rm -rf "$out"
    mv "$out.tmp" "$out"
  fi
  echo "$out/$name"
}

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    goreleaser) go_install goreleaser "$GORELEASER_VERSION" github.com/goreleaser/goreleaser/v2 ;;
    krew) go_install krew "$KREW_VERSION" sigs.k8s.io/krew/cmd/krew ;;
    all)
      go_install goreleaser "$GORELEASER_VERSION" github.com/goreleaser/goreleaser/v2
      go_install krew "$KREW_VERSION" sigs.k8s.io/krew/cmd/krew
      ;;
    *) die "unknown target $t (want goreleaser, krew or all)" ;;
  esac
done
