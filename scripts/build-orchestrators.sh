#!/usr/bin/env bash
# Builds the orchestrators the helm shim is tested with (make
# test-orchestrators) from the Go module proxy into .cache/bin/<name>-<version>/,
# like scripts/build-controlplane.sh does for the control plane. A binary
# already in the cache is not rebuilt; nothing is downloaded as a prebuilt
# binary. Prints the path of each binary asked for on stdout (one a line).
#
# helmfile's go.mod has replace directives, so `go install helmfile@version`
# refuses it: it is built inside a writable copy of its own module, with its
# own pinned versions (none shared with the tool's build: a cold build took
# 1255 CPU-seconds measured on the 2-core test machine).
#
# Helmsman is not served whole by the Go module proxy: it is built
# from the folder HELMSMAN_SRC the user or CI gives, holding
# helmsman-<v>.tar.gz or its unpacked tree; its dependencies come from the
# proxy. Once cached, HELMSMAN_SRC is not needed.
#
# Usage: [HELMSMAN_SRC=DIR] scripts/build-orchestrators.sh [helmfile|helmsman|all]...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The newest helmfile the Go module proxy serves.
HELMFILE_VERSION="${HELMFILE_VERSION:-v1.8.0}"

helmfile_bin_dir() { echo "$CACHE_DIR/bin/helmfile-$HELMFILE_VERSION"; }

# Helmsman of the first report in the seeds (its reinstall on a namespace move).
HELMSMAN_VERSION="${HELMSMAN_VERSION:-v3.18.0}"

helmsman_bin_dir() { echo "$CACHE_DIR/bin/helmsman-$HELMSMAN_VERSION"; }

build_helmfile() {
  local out; out="$(helmfile_bin_dir)"
  if [[ ! -x "$out/helmfile" ]]; then
    # Its own lock: it shares no scratch dir with the control plane, whose
    # builds must not wait for this long one.
    lock_build "build-helmfile" "helmfile"
    if [[ ! -x "$out/helmfile" ]]; then
      local moddir dir="$CACHE_DIR/src/helmfile-$HELMFILE_VERSION"
      moddir="$(go mod download -json "github.com/helmfile/helmfile@$HELMFILE_VERSION" |
        sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
      [[ -f "$moddir/go.mod" ]] || die "cannot download github.com/helmfile/helmfile@$HELMFILE_VERSION"
      rm -rf "$dir"
      mkdir -p "$(dirname "$dir")"
      # The module cache is read-only; go build wants to write nothing there,
      # but a copy lets its go.mod (with the replaces) be the main module.
      cp -R "$moddir" "$dir"
      chmod -R u+w "$dir"
      building "helmfile $HELMFILE_VERSION" 60 build_helmfile_in "$dir" "$out"
      rm -rf "$out"
      mv "$out.tmp" "$out"
    fi
  fi
  echo "$out/helmfile"
}

build_helmfile_in() (
  local dir=$1 out=$2
  cd "$dir"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  # The version ldflag is the one helmfile's Makefile sets: `helmfile
  # version` then names the release instead of "(devel)".
  go build -ldflags "-s -w -X go.szostok.io/version.version=$HELMFILE_VERSION" \
    -o "$out.tmp/helmfile" .
)

build_helmsman() {
  local out; out="$(helmsman_bin_dir)"
  if [[ ! -x "$out/helmsman" ]]; then
    lock_build "build-helmsman" "helmsman"
    if [[ ! -x "$out/helmsman" ]]; then
      [[ -n "${HELMSMAN_SRC:-}" ]] || die "helmsman $HELMSMAN_VERSION is not built and HELMSMAN_SRC is not set: give the folder holding helmsman-$HELMSMAN_VERSION.tar.gz (or its unpacked tree), e.g. make test-orchestrators HELMSMAN_SRC=/path/to/helmsman"
      local dir="$CACHE_DIR/src/helmsman-$HELMSMAN_VERSION"
      unpack_source "$HELMSMAN_SRC" helmsman "$HELMSMAN_VERSION" "$dir"
      building "helmsman $HELMSMAN_VERSION" 5 build_helmsman_in "$dir" "$out"
      rm -rf "$out"
      mv "$out.tmp" "$out"
    fi
  fi
  echo "$out/helmsman"
}

build_helmsman_in() (
  local dir=$1 out=$2
  cd "$dir"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  # Its version is a constant in internal/app (no ldflag to set).
  go build -ldflags "-s -w" -o "$out.tmp/helmsman" ./cmd/helmsman
)

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    helmfile) build_helmfile ;;
    helmsman) build_helmsman ;;
    all) build_helmfile; build_helmsman ;;
    *) die "unknown target $t (want helmfile, helmsman or all)" ;;
  esac
done
