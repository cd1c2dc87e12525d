#!/usr/bin/env bash
# Helm plugin install/update hook (plugin.yaml): puts the helm-safe-upgrade
# binary (and bin/helm, the drop-in helm's dispatcher that `helm safe-upgrade
# shim install` links to) into $HELM_PLUGIN_DIR/bin, in the first way that
# applies:
#
#   1. source  — the plugin folder is a checkout (go.mod there) and `go` is on
#                PATH: build it (Go fetches modules from its proxy, nothing else).
#   2. present — bin/ already holds the binary (an unpacked release archive).
#   3. release — download this plugin version's archive for the OS/arch from
#                the GitHub release, check its sha256 against the release's
#                checksums file, and unpack its bin/.
#
# Environment (all optional):
#   HELM_PLUGIN_DIR             plugin folder (Helm sets it; default: this script's parent)
#   SAFE_UPGRADE_INSTALL        force a way: source, present or release
#   SAFE_UPGRADE_VERSION        release to download (default: plugin.yaml's version)
#   SAFE_UPGRADE_RELEASE_URL    base URL holding the archives and checksums
#                               (default: the GitHub release of that version)
set -euo pipefail

readonly PROJECT=helm-safe-upgrade
readonly REPO_URL=https://github.com/safe-upgrade/helm-safe-upgrade

die() { echo "safe-upgrade install: error: $*" >&2; exit 1; }
log() { echo "safe-upgrade install: $*" >&2; }

plugin_dir="${HELM_PLUGIN_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
[[ -f "$plugin_dir/plugin.yaml" ]] || die "no plugin.yaml in $plugin_dir (is HELM_PLUGIN_DIR right?)"
bin_dir="$plugin_dir/bin"

# plugin_version prints plugin.yaml's version, without quotes.
plugin_version() {
  sed -n 's/^version:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*$/\1/p' "$plugin_dir/plugin.yaml" | head -n 1
}

# detect_os and detect_arch print Go's names for this machine.
detect_os() {
  case "$(uname -s)" in
    Linux) echo linux ;;
    Darwin) echo darwin ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT) echo windows ;;
    *) die "unsupported OS $(uname -s) (releases exist for linux, darwin and windows)" ;;
  esac
}
detect_arch() {
  case "$(uname -m)" in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "unsupported architecture $(uname -m) (releases exist for amd64 and arm64)" ;;
  esac
}

os="$(detect_os)"
exe=""
[[ "$os" == windows ]] && exe=".exe"
binary="$bin_dir/$PROJECT$exe"

# install_from_source builds the checkout's command into bin/ through a
# temporary name, so a concurrent build or a running binary never sees half a
# file.
install_from_source() {
  local version commit tmp
  version="$(plugin_version)-source"
  commit="$(git -C "$plugin_dir" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  mkdir -p "$bin_dir"
  tmp="$(mktemp "$bin_dir/.$PROJECT.XXXXXX")"
  trap 'rm -f "$tmp"' EXIT
  log "building $PROJECT from source in $plugin_dir"
  (cd "$plugin_dir" && go build -trimpath \
    -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
    -o "$tmp" ./cmd/helm-safe-upgrade) || die "go build failed in $plugin_dir"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$binary"
  # The drop-in helm's dispatcher, which `shim install` links to.
  (cd "$plugin_dir" && go build -trimpath -ldflags "-s -w" -o "$tmp" ./cmd/helm-shim) ||
    die "go build ./cmd/helm-shim failed in $plugin_dir"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$bin_dir/helm$exe"
  trap - EXIT
}

# sha256_of FILE prints FILE's sha256 with whichever tool the machine has.
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum found; cannot verify the download"
  fi
}

# fetch URL FILE downloads URL to FILE with curl or wget, failing on HTTP errors.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$2" "$1" || die "download failed: $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || die "download failed: $1"
  else
    die "neither curl nor wget found; cannot download $1"
  fi
}

# install_from_release downloads the archive for this OS/arch, verifies it
# against the checksums file and unpacks the binaries into bin/.
install_from_release() {
  local version arch format archive sums base tmp want got
  version="${SAFE_UPGRADE_VERSION:-$(plugin_version)}"
  version="${version#v}"
  [[ -n "$version" ]] || die "no version in $plugin_dir/plugin.yaml"
  arch="$(detect_arch)"
  format=tar.gz
  [[ "$os" == windows ]] && format=zip
  archive="${PROJECT}_${version}_${os}_${arch}.$format"
  sums="${PROJECT}_${version}_checksums.txt"
  base="${SAFE_UPGRADE_RELEASE_URL:-$REPO_URL/releases/download/v$version}"

  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  log "downloading $archive from $base"
  fetch "$base/$sums" "$tmp/$sums"
  fetch "$base/$archive" "$tmp/$archive"
  want="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/$sums")"
  [[ -n "$want" ]] || die "$sums lists no $archive"
  got="$(sha256_of "$tmp/$archive")"
  [[ "$got" == "$want" ]] || die "sha256 mismatch for $archive: got $got, $sums says $want"

  mkdir -p "$tmp/unpacked" "$bin_dir"
  case "$format" in
    tar.gz) tar -xzf "$tmp/$archive" -C "$tmp/unpacked" ;;
    # Windows 10+ ships a tar (bsdtar) that reads zip; unzip is the fallback.
    zip) tar -xf "$tmp/$archive" -C "$tmp/unpacked" 2>/dev/null ||
      unzip -q "$tmp/$archive" -d "$tmp/unpacked" || die "cannot unpack $archive" ;;
  esac
  [[ -f "$tmp/unpacked/bin/$PROJECT$exe" ]] || die "$archive holds no bin/$PROJECT$exe"
  cp -f "$tmp/unpacked/bin/"* "$bin_dir/"
  chmod 0755 "$bin_dir/"*
  rm -rf "$tmp"
  trap - EXIT
}

way="${SAFE_UPGRADE_INSTALL:-}"
if [[ -z "$way" ]]; then
  if [[ -f "$plugin_dir/go.mod" ]] && command -v go >/dev/null 2>&1; then
    way=source
  elif [[ -x "$binary" ]]; then
    way=present
  else
    way=release
  fi
fi
case "$way" in
  source) install_from_source ;;
  present) [[ -x "$binary" ]] || die "SAFE_UPGRADE_INSTALL=present but $binary is missing" ;;
  release) install_from_release ;;
  *) die "SAFE_UPGRADE_INSTALL=$way: want source, present or release" ;;
esac

"$binary" --version >/dev/null || die "$binary does not run on this machine"
log "installed $("$binary" --version) ($way) in $bin_dir"
