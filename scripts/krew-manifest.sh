#!/usr/bin/env bash
# Writes the krew plugin manifest of a release on stdout: .krew.yaml (the
# template) with the version, each platform's archive URL and its sha256
# filled in from a goreleaser dist/ folder (archives + checksums file).
#
# The platforms are those the template names (@URI_<os>_<arch>@ tokens). Every
# one must be listed in the checksums file; an archive present in DIST_DIR must
# match its listed sum. Anything missing or wrong is an error, never a
# manifest with a hole.
#
# Usage: scripts/krew-manifest.sh [--base-url URL] [--platform OS_ARCH]... DIST_DIR > safe-upgrade.yaml
#   --base-url  where the archives are downloaded from (default: the GitHub
#               release of the version, .../releases/download/vVERSION)
#   --platform  only this platform of the template (repeatable), e.g. linux_amd64:
#               a manifest for a local single-platform build (make test's);
#               a release's manifest names every platform
set -euo pipefail

readonly PROJECT=helm-safe-upgrade
readonly REPO_URL=https://github.com/safe-upgrade/helm-safe-upgrade
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATE="$ROOT/.krew.yaml"

die() { echo "krew-manifest: error: $*" >&2; exit 1; }
usage() { die "usage: $0 [--base-url URL] DIST_DIR"; }

base_url=""
dist=""
only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base-url) [[ $# -ge 2 ]] || usage; base_url="$2"; shift 2 ;;
    --base-url=*) base_url="${1#*=}"; shift ;;
    --platform) [[ $# -ge 2 ]] || usage; only+=("$2"); shift 2 ;;
    --platform=*) only+=("${1#*=}"); shift ;;
    -*) usage ;;
    *) [[ -z "$dist" ]] || usage; dist="$1"; shift ;;
  esac
done
[[ -n "$dist" ]] || usage
[[ -d "$dist" ]] || die "$dist is not a folder"
[[ -f "$TEMPLATE" ]] || die "template $TEMPLATE is missing"

shopt -s nullglob
sums_files=("$dist/${PROJECT}_"*_checksums.txt)
shopt -u nullglob
[[ ${#sums_files[@]} -eq 1 ]] ||
  die "want exactly one ${PROJECT}_VERSION_checksums.txt in $dist, found ${#sums_files[@]}"
sums="${sums_files[0]}"
version="$(basename "$sums")"
version="${version#"${PROJECT}_"}"
version="${version%_checksums.txt}"
[[ -n "$version" ]] || die "cannot read the version from $(basename "$sums")"
base_url="${base_url:-$REPO_URL/releases/download/v$version}"
base_url="${base_url%/}"

# sha256_of FILE prints FILE's sha256.
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# listed_sum NAME prints the sum the checksums file gives NAME (empty if none).
listed_sum() {
  awk -v f="$1" '$2 == f || $2 == "*" f { print $1; exit }' "$sums"
}

platforms="$(grep -o '@URI_[a-z0-9]*_[a-z0-9]*@' "$TEMPLATE" | sed 's/^@URI_//; s/@$//' | sort -u)"
[[ -n "$platforms" ]] || die "$TEMPLATE names no platform (@URI_<os>_<arch>@)"
template="$(cat "$TEMPLATE")"
if [[ ${#only[@]} -gt 0 ]]; then
  for p in "${only[@]}"; do
    grep -qx "$p" <<<"$platforms" || die "--platform $p: the template has $(tr '\n' ' ' <<<"$platforms")"
  done
  platforms="$(printf '%s\n' "${only[@]}" | sort -u)"
  # The platforms are the template's last block, one "  - selector:" item each:
  # keep the items whose URI token names a kept platform.
  template="$(awk -v keep=" $(tr '\n' ' ' <<<"$platforms")" '
    function flush() { if (item != "" && index(keep, " " plat " ")) printf "%s", item; item = "" }
    /^  - selector:/ { flush(); inside = 1 }
    inside { item = item $0 "\n"; if (match($0, /@URI_[a-z0-9]+_[a-z0-9]+@/)) plat = substr($0, RSTART + 5, RLENGTH - 6); next }
    { print }
    END { flush() }' <<<"$template")"
fi

sed_script=("-e" "s|@VERSION@|$version|g")
for platform in $platforms; do
  os="${platform%%_*}"
  format=tar.gz
  [[ "$os" == windows ]] && format=zip
  archive="${PROJECT}_${version}_${platform}.$format"
  sum="$(listed_sum "$archive")"
  [[ "$sum" =~ ^[0-9a-f]{64}$ ]] || die "$(basename "$sums") lists no sha256 for $archive"
  if [[ -f "$dist/$archive" ]]; then
    actual="$(sha256_of "$dist/$archive")"
    [[ "$actual" == "$sum" ]] || die "$dist/$archive has sha256 $actual, but $(basename "$sums") says $sum"
  fi
  sed_script+=("-e" "s|@URI_${platform}@|$base_url/$archive|g" "-e" "s|@SHA256_${platform}@|$sum|g")
done

# The template's leading comment is about the template, not the manifest.
manifest="$(sed -e '1,/^apiVersion:/{/^#/d;}' "${sed_script[@]}" <<<"$template")"
if left="$(grep -o '@[A-Za-z0-9_]*@' <<<"$manifest")"; then
  die "tokens left unfilled in the manifest: $(tr '\n' ' ' <<<"$left")"
fi
printf '%s\n' "$manifest"
