# Shared settings for the project's scripts: versions and the cache layout.
# Every binary the tests need is built from the Go module proxy and cached
# under .cache/ (git-ignored), keyed by version, so a second build is instant.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${SAFE_UPGRADE_CACHE:-$ROOT/.cache}"

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
# The etcd release whose client KUBE_VERSION's go.mod requires: the server then
# builds in the same go build as the API server and shares its dependencies
# (scripts/build-controlplane.sh).
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
HELM3_VERSION="${HELM3_VERSION:-v3.22.0}"
HELM4_VERSION="${HELM4_VERSION:-v4.3.1}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
# The Kubernetes binaries a run needs. kube-up.sh starts the controller
# manager and the scheduler (with kwok, which plays the kubelets) only when
# they are listed; make test's second, older minor runs plan tests only and
# needs no controllers (a third less to compile on a cold cache).
KUBE_COMPONENTS="${KUBE_COMPONENTS:-kube-apiserver kube-controller-manager kube-scheduler kubectl}"

kube_bin_dir() { echo "$CACHE_DIR/bin/kubernetes-$KUBE_VERSION"; }
etcd_bin_dir() { echo "$CACHE_DIR/bin/etcd-$ETCD_VERSION"; }
# kwok is built against the Kubernetes release's libraries: one per pair.
kwok_bin_dir() { echo "$CACHE_DIR/bin/kwok-$KWOK_VERSION-kubernetes-$KUBE_VERSION"; }
helm_bin_dir() { echo "$CACHE_DIR/bin/helm-$1"; }

log() { echo "==> $*" >&2; }

# children_cpu VAR sets VAR to the CPU-seconds (user + system) this shell's
# finished children have used so far, from bash's `times`: the difference
# across a build is what it cost, whatever else the machine was doing (wall
# time is not). It must run in the shell itself (a $(...) would be a new
# process with no children), hence the variable.
children_cpu() {
  local f; f="$(mktemp)"
  times >"$f"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    n = split($0, f, " ")
    for (i = 1; i <= n; i++) { split(f[i], ms, "m"); sub("s", "", ms[2]); s += ms[1] * 60 + ms[2] }
    printf "%.0f", s
  }' "$f")"
  rm -f "$f"
}

# has_component NAME: true if KUBE_COMPONENTS lists NAME.
has_component() { [[ " $KUBE_COMPONENTS " == *" $1 "* ]]; }
die() { echo "error: $*" >&2; exit 1; }

# pid_alive PID [MARK]: true if PID is running (a zombie counts as gone) and,
# with MARK, one of its arguments is MARK or starts with MARK/ — so a PID that
# the system reused for another program is never taken for ours.
pid_alive() {
  local pid=$1 mark=${2:-} stat args
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  if [[ -d /proc/self ]]; then
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [[ "${stat%% *}" != [ZX] ]] || return 1
    args="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) " || return 1
  else
    args="$(ps -p "$pid" -o state=,command= 2>/dev/null) " || return 1
    [[ "$args" != Z* ]] || return 1
  fi
  [[ -z "$mark" || "$args" == *"$mark/"* || "$args" == *"$mark "* ]]
}

# stop_pid_file FILE MARK [SECONDS]: stops the process named in FILE if it is
# still ours (SIGTERM, then SIGKILL after SECONDS, default 20), waits until it
# is gone, removes FILE.
stop_pid_file() {
  local file=$1 mark=$2 secs=${3:-20} pid
  [[ -f "$file" ]] || return 0
  pid="$(cat "$file")"
  if pid_alive "$pid" "$mark"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((secs * 5))); do pid_alive "$pid" "$mark" || break; sleep 0.2; done
    if pid_alive "$pid" "$mark"; then
      log "$(basename "$file" .pid) (pid $pid) ignored SIGTERM for ${secs}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do pid_alive "$pid" "$mark" || break; sleep 0.2; done
    fi
  fi
  rm -f "$file"
}

# lock_build NAME WHAT: holds .cache/NAME.lock (on fd 9) for the rest of the
# script, waiting for whoever holds it. Builds that share scratch and .tmp
# dirs share a lock; a build that shares nothing with them (helmfile, an hour
# of CPU) takes its own, so the control plane never waits for it.
lock_build() {
  local name=$1 what=$2
  mkdir -p "$CACHE_DIR"
  if ! command -v flock >/dev/null; then
    log "flock not found: not guarding against a concurrent build"
    return 0
  fi
  exec 9>"$CACHE_DIR/$name.lock"
  if ! flock -n 9; then
    log "waiting for another build of $what to finish"
    flock 9
  fi
}

# quietly CMD...: runs CMD, showing its output only when it fails (go get
# and go mod tidy list every module they add).
quietly() {
  local out
  if ! out="$("$@" 2>&1)"; then
    printf '%s\n' "$out" >&2
    return 1
  fi
}

# building WHAT COLD_MINUTES CMD...: runs CMD with a line when it starts, one
# every 30 s while it runs (a cold build is long and otherwise silent) and one
# with the wall time and CPU-seconds it took.
building() {
  local what=$1 cold=$2; shift 2
  local start=$SECONDS cpu cpu_end hb rc=0
  children_cpu cpu
  log "building $what (cold cache: about $cold min on 2 cores; cached afterwards)"
  ( while sleep 30; do log "  still building $what: $((SECONDS - start))s"; done ) &
  hb=$!
  "$@" || rc=$?
  kill "$hb" 2>/dev/null; wait "$hb" 2>/dev/null || true
  ((rc == 0)) || die "building $what failed"
  children_cpu cpu_end
  log "built $what in $((SECONDS - start))s wall, $((cpu_end - cpu)) CPU-s"
}

# unpack_source SRC NAME VERSION DEST: makes DEST the source tree of
# NAME VERSION taken from the folder SRC the user gave (FLUX_SRC,
# HELMSMAN_SRC), which holds either the archive NAME-VERSION.tar.gz or the
# unpacked tree NAME-VERSION/ (or NAME/). The tree is copied, never built in
# place: the user's checkout stays as it was.
unpack_source() {
  local src=$1 name=$2 version=$3 dest=$4 tree=""
  [[ -d "$src" ]] || die "$src: not a folder (it should hold $name-$version.tar.gz or its unpacked tree)"
  rm -rf "$dest" "$dest.tmp"
  mkdir -p "$dest.tmp"
  if [[ -f "$src/$name-$version.tar.gz" ]]; then
    tar -xzf "$src/$name-$version.tar.gz" -C "$dest.tmp" || die "$src/$name-$version.tar.gz: cannot unpack"
    tree="$dest.tmp/$name-$version"
    [[ -f "$tree/go.mod" ]] || die "$src/$name-$version.tar.gz: no $name-$version/go.mod inside"
  else
    local d
    for d in "$src/$name-$version" "$src/$name"; do
      if [[ -f "$d/go.mod" ]]; then tree="$d"; break; fi
    done
    [[ -n "$tree" ]] || die "$src holds neither $name-$version.tar.gz nor an unpacked $name-$version/ (with go.mod)"
    cp -R "$tree" "$dest.tmp/$name-$version"
    tree="$dest.tmp/$name-$version"
  fi
  chmod -R u+w "$tree"
  mv "$tree" "$dest"
  rm -rf "$dest.tmp"
}
