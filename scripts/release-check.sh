#!/usr/bin/env bash
# Checks, before goreleaser builds a release, that plugin.yaml's version is the
# version being released: the plugin's install hook (scripts/install-binary.sh)
# downloads the release that plugin.yaml names, so a mismatch would install
# another version. An empty VERSION (a snapshot build) checks nothing.
#
# Usage: scripts/release-check.sh VERSION      (e.g. 0.2.0, as goreleaser's .Version)
set -euo pipefail

die() { echo "release-check: error: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: $0 VERSION (empty for a snapshot)"
want="${1#v}"
[[ -z "$want" ]] && exit 0
plugin_yaml="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/plugin.yaml"
have="$(sed -n 's/^version:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*$/\1/p' "$plugin_yaml" | head -n 1)"
[[ "$have" == "$want" ]] ||
  die "plugin.yaml has version \"$have\" but the release is $want: set version: \"$want\" in plugin.yaml and tag again"
