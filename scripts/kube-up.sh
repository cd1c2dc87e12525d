#!/usr/bin/env bash
# Starts a local control plane for tests and the demo: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (built from the Go module
# proxy by build-controlplane.sh, cached) on random free loopback ports, with a
# fresh data dir, RBAC on, a token-auth admin in system:masters and an audit
# log of every request (Metadata level) so tests can prove what was sent.
#
# Pods run: kwok plays the kubelets of $KWOK_NODES fake Nodes (annotation
# kwok.x-k8s.io/node=fake, 4 CPUs, 16Gi and 110 pods each), the scheduler
# binds pods to them, and the Stages in scripts/controlplane/kwok/stages.yaml
# make them Running and Ready, or fail by image tag (docs/development.md).
# kwok leaves every other Node alone, so a Node a test creates stays a plain
# object (pods bound to it stay Pending).
#
# Usage: scripts/kube-up.sh [--foreground] [STATE_DIR]
#   STATE_DIR defaults to $KUBE_STATE_DIR, else a new .cache/run/kube-<version>-XXXXXX.
#   It must be empty or hold a stopped cluster (its data is wiped).
#
# The components run under a supervisor process (this script, re-executed with
# --supervise) that stays their parent, so they are reaped when they exit, and
# that stops them all, in order, when it is told to (SIGTERM, kube-down.sh),
# when one of them dies, or when KUBE_UP_OWNER_PID exits. By default the
# supervisor is detached and this script returns once the cluster is ready;
# with --foreground it runs in this process (tests start it that way, so the
# supervisor is their child too).
#
# When ready it prints `export KUBECONFIG=STATE_DIR/kubeconfig` on stdout; all
# progress goes to stderr. The state dir then holds:
#   kubeconfig           admin credentials (user "admin", group system:masters)
#   audit.log            JSON audit events, one a line (blocking mode: written as each
#                        request completes; maxsize 0: never rotated)
#   kube-up.pid          the supervisor; scripts/kube-down.sh STATE_DIR stops everything
#   *.pid, *.log         one per component (kube-up.log: the detached supervisor's output)
#   pki/                 CA, serving cert, service-account key pair
#
# Environment:
#   KUBE_VERSION          control-plane version (see lib.sh), e.g. v1.36.3
#   KUBE_COMPONENTS       without kube-controller-manager, none is started; without
#                         kube-scheduler neither it nor kwok (no pod runs) (lib.sh)
#   KWOK_NODES            how many fake Nodes kwok runs (default 3)
#   KUBE_UP_TIMEOUT       seconds to wait for readiness (default 180)
#   KUBE_UP_OWNER_PID     stop the cluster when that process exits (tests pass
#                         their own PID so a crashed test binary leaks nothing)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SELF="$ROOT/scripts/kube-up.sh"
TIMEOUT="${KUBE_UP_TIMEOUT:-180}"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
# etcd last: the API server needs it to shut down.
STOP_ORDER=(kwok kube-scheduler kube-controller-manager kube-apiserver etcd)
KWOK_NODES="${KWOK_NODES:-3}"
# Without the controller manager in KUBE_COMPONENTS (lib.sh) only etcd and the
# API server run: enough for plans, not for pods or service-account tokens.
if ! has_component kube-controller-manager; then
  COMPONENTS=(etcd kube-apiserver)
elif ! has_component kube-scheduler; then
  COMPONENTS=(etcd kube-apiserver kube-controller-manager)
fi
has_component kubectl || die "KUBE_COMPONENTS must include kubectl: kube-up.sh checks readiness with it"

ETCD="$(etcd_bin_dir)/etcd"
KBIN="$(kube_bin_dir)"
KUBECTL="$KBIN/kubectl"
KWOK="$(kwok_bin_dir)/kwok"
KWOK_STAGES="$ROOT/scripts/controlplane/kwok/stages.yaml"
KWOK_LOG="$ROOT/scripts/controlplane/kwok/crash.log"

# prepare_state DIR: resolves the state dir into STATE (absolute), refuses one
# whose cluster still runs, and removes what an earlier run left there.
prepare_state() {
  STATE=$1
  if [[ -z "$STATE" ]]; then
    mkdir -p "$CACHE_DIR/run"
    STATE="$(mktemp -d "$CACHE_DIR/run/kube-$KUBE_VERSION-XXXXXX")"
  fi
  mkdir -p "$STATE"
  STATE="$(cd "$STATE" && pwd)"
  local c
  for c in kube-up "${COMPONENTS[@]}"; do
    if [[ -f "$STATE/$c.pid" ]] && pid_alive "$(cat "$STATE/$c.pid")" "$STATE"; then
      die "$c is already running from $STATE (scripts/kube-down.sh $STATE stops it)"
    fi
  done
  # Only the names this script writes are removed, never the whole dir.
  rm -rf "$STATE/etcd-data" "$STATE/pki" "$STATE"/*.pid "$STATE"/*.log "$STATE/ready" \
    "$STATE/kubeconfig" "$STATE"/*.kubeconfig "$STATE/tokens.csv" "$STATE/audit-policy.yaml" \
    "$STATE/nodes.yaml" "$STATE/kwok-logs.yaml"
}

# --- credentials -------------------------------------------------------------
gen_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

gen_pki() {
  gen_key "$PKI/ca.key"
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=safe-upgrade-test-ca" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$PKI/ca.crt" 2>/dev/null
  gen_key "$PKI/apiserver.key"
  openssl req -new -key "$PKI/apiserver.key" -subj "/CN=kube-apiserver" -out "$PKI/apiserver.csr" 2>/dev/null
  printf '%s\n' \
    "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
    >"$PKI/apiserver.ext"
  openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 3650 -extfile "$PKI/apiserver.ext" \
    -out "$PKI/apiserver.crt" 2>/dev/null
  # kwok's kubelet server (container logs), at the fake Nodes' InternalIP.
  gen_key "$PKI/kwok.key"
  openssl req -new -key "$PKI/kwok.key" -subj "/CN=kwok" -out "$PKI/kwok.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1" >"$PKI/kwok.ext"
  openssl x509 -req -in "$PKI/kwok.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 3650 -extfile "$PKI/kwok.ext" \
    -out "$PKI/kwok.crt" 2>/dev/null
  # Service-account tokens: signed with this key, verified with its public half.
  gen_key "$PKI/sa.key"
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
}

# write_kubeconfig FILE USER TOKEN PORT
write_kubeconfig() {
  local ca; ca="$(base64 <"$PKI/ca.crt" | tr -d '\n')"
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: safe-upgrade-test
  cluster:
    server: https://127.0.0.1:$4
    certificate-authority-data: $ca
users:
- name: $2
  user:
    token: $3
contexts:
- name: safe-upgrade-test
  context:
    cluster: safe-upgrade-test
    user: $2
    namespace: default
current-context: safe-upgrade-test
EOF
  chmod 600 "$1"
}

# write_credentials: the PKI, the static tokens and the audit policy.
write_credentials() {
  command -v openssl >/dev/null || die "openssl is needed to generate the test cluster's certificates"
  mkdir -p "$PKI"
  gen_pki
  ADMIN_TOKEN="$(openssl rand -hex 24)"
  KCM_TOKEN="$(openssl rand -hex 24)"
  SCHED_TOKEN="$(openssl rand -hex 24)"
  KWOK_TOKEN="$(openssl rand -hex 24)"
  # token,user,uid,"groups": each component gets its own user so audit
  # events tell its requests from the tests'.
  cat >"$STATE/tokens.csv" <<EOT
$ADMIN_TOKEN,admin,admin,"system:masters"
$KCM_TOKEN,system:kube-controller-manager,kube-controller-manager,"system:masters"
$SCHED_TOKEN,system:kube-scheduler,kube-scheduler,"system:masters"
$KWOK_TOKEN,kwok,kwok,"system:masters"
EOT
  chmod 600 "$STATE/tokens.csv"
  cat >"$STATE/audit-policy.yaml" <<'EOT'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
EOT
}

# --- ports and processes -----------------------------------------------------
# free_port VAR: sets VAR to a loopback port nobody listens on, below the
# ephemeral range so an outgoing connection cannot take it between the check
# and the bind, and different from the ports already handed out.
USED_PORTS=" "
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((10000 + RANDOM % 22000))
    [[ "$USED_PORTS" == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      USED_PORTS+="$p "
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  die "no free loopback port found"
}

# start NAME BINARY ARGS...: runs it in the background with its output in
# NAME.log (never on our stdout: callers may be reading that until EOF).
start() {
  local name=$1; shift
  "$@" >"$STATE/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/$name.pid"
}

# component_died prints the first component that has exited. No command-line
# check here: these are our own children, possibly not yet exec'd.
component_died() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [[ -f "$STATE/$c.pid" ]] || continue
    pid_alive "$(cat "$STATE/$c.pid")" || { echo "$c"; return 0; }
  done
  return 1
}

show_logs() {
  local c
  for c in "$@"; do
    [[ -f "$STATE/$c.log" ]] || continue
    echo "---- last lines of $STATE/$c.log" >&2
    tail -n 30 "$STATE/$c.log" >&2
  done
}

# wait_for WHAT CMD...: polls CMD until it succeeds, a component dies or the
# deadline passes. Returns 2 when a port was taken under us (caller retries).
wait_for() {
  local what=$1; shift
  local dead
  while ! "$@" >/dev/null 2>&1; do
    if dead="$(component_died)"; then
      if grep -q "address already in use" "$STATE/$dead.log" 2>/dev/null; then
        log "$dead lost its port to another process; retrying with new ports"
        return 2
      fi
      echo "error: $dead exited while waiting for $what" >&2
      show_logs "$dead"
      return 1
    fi
    if owner_gone; then
      echo "error: owner process $KUBE_UP_OWNER_PID exited while waiting for $what" >&2
      return 1
    fi
    if ((SECONDS >= DEADLINE)); then
      echo "error: timed out after ${TIMEOUT}s waiting for $what" >&2
      show_logs "${COMPONENTS[@]}"
      return 1
    fi
    sleep 0.5
  done
}

owner_gone() { [[ -n "${KUBE_UP_OWNER_PID:-}" ]] && ! pid_alive "$KUBE_UP_OWNER_PID"; }

stop_components() {
  local c
  for c in "${STOP_ORDER[@]}"; do stop_pid_file "$STATE/$c.pid" "$STATE"; done
}

kubectl_admin() { "$KUBECTL" --kubeconfig="$STATE/kubeconfig" --request-timeout=5s "$@"; }
apiserver_ready() { [[ "$(kubectl_admin get --raw=/readyz)" == ok ]]; }
# The controller manager is up once its service-account controller has made
# the default ServiceAccount (pods cannot be created in a namespace without it).
controllers_ready() { kubectl_admin get serviceaccount default -n default -o name; }
# The scheduler serves its health checks once it runs; kwok has made every
# fake Node Ready.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
fake_nodes_ready() {
  local ready
  ready="$(kubectl_admin get nodes -l type=kwok \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')" || return 1
  [[ "$(grep -c '^True$' <<<"$ready")" == "$KWOK_NODES" ]]
}

# write_fake_nodes FILE: the Nodes kwok manages. Ample but finite: a pod that
# asks for more than 4 CPUs fits none and stays Pending (Unschedulable).
write_fake_nodes() {
  local i
  : >"$1"
  for ((i = 0; i < KWOK_NODES; i++)); do
    cat >>"$1" <<EOT
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
  capacity: {cpu: "4", memory: 16Gi, pods: "110"}
EOT
  done
}

# write_kwok_logs FILE: the container logs kwok serves (ClusterLogs), for
# every container of every pod: scripts/controlplane/kwok/crash.log, current
# and previous instance alike (docs/development.md).
write_kwok_logs() {
  cat >"$1" <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: crash-log
spec:
  logs:
  - logsFile: $KWOK_LOG
    previousLogsFile: $KWOK_LOG
EOF
}

# start_pods_runtime: the scheduler, kwok and its fake Nodes. kwok also
# serves what a kubelet serves (pods/log through the API server) on
# kwok_port, at the Nodes' InternalIP 127.0.0.1.
start_pods_runtime() {
  local sched_port=$1 kwok_port=$2
  start kube-scheduler "$KBIN/kube-scheduler" \
    --kubeconfig="$STATE/sched.kubeconfig" \
    --authentication-kubeconfig="$STATE/sched.kubeconfig" --authorization-kubeconfig="$STATE/sched.kubeconfig" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$sched_port" --profiling=false
  write_kwok_logs "$STATE/kwok-logs.yaml"
  start kwok "$KWOK" \
    --kubeconfig="$STATE/kwok.kubeconfig" --config="$KWOK_STAGES" --config="$STATE/kwok-logs.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="$kwok_port" --server-address="127.0.0.1:$kwok_port" \
    --tls-cert-file="$PKI/kwok.crt" --tls-private-key-file="$PKI/kwok.key"
  write_fake_nodes "$STATE/nodes.yaml"
  kubectl_admin create -f "$STATE/nodes.yaml" >/dev/null || return 1
  # The API server taints every new Node not-ready (TaintNodesByCondition);
  # the node lifecycle controller, which would lift it, is off (nothing sends
  # heartbeats), so the taint goes here.
  local i
  for ((i = 0; i < KWOK_NODES; i++)); do
    kubectl_admin patch node "kwok-node-$i" --type=merge -p '{"spec":{"taints":null}}' >/dev/null || return 1
  done
  wait_for "kube-scheduler on port $sched_port" port_open "$sched_port" || return
  wait_for "kwok to make $KWOK_NODES fake Nodes Ready" fake_nodes_ready
}

start_all() {
  local etcd_port peer_port api_port kcm_port sched_port kwok_port
  USED_PORTS=" "
  free_port etcd_port; free_port peer_port; free_port api_port; free_port kcm_port; free_port sched_port
  free_port kwok_port
  rm -rf "$STATE/etcd-data" "$STATE/audit.log"

  start etcd "$ETCD" --name=default --data-dir="$STATE/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="default=http://127.0.0.1:$peer_port" \
    --unsafe-no-fsync --log-level=warn

  # The advertise address is loopback too (no default route needed); the
  # endpoint reconciler is off because Endpoints may not hold loopback IPs.
  start kube-apiserver "$KBIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
    --endpoint-reconciler-type=none \
    --cert-dir="$PKI" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=RBAC \
    --service-cluster-ip-range=10.96.0.0/16 \
    --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$PKI/ca.crt" \
    --audit-policy-file="$STATE/audit-policy.yaml" --audit-log-path="$STATE/audit.log" \
    --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0 \
    --profiling=false

  write_kubeconfig "$STATE/kubeconfig" admin "$ADMIN_TOKEN" "$api_port"
  write_kubeconfig "$STATE/kcm.kubeconfig" system:kube-controller-manager "$KCM_TOKEN" "$api_port"
  write_kubeconfig "$STATE/sched.kubeconfig" system:kube-scheduler "$SCHED_TOKEN" "$api_port"
  write_kubeconfig "$STATE/kwok.kubeconfig" kwok "$KWOK_TOKEN" "$api_port"
  wait_for "kube-apiserver /readyz on port $api_port" apiserver_ready || return

  has_component kube-controller-manager || return 0
  # Canonical controller names (1.37 no longer knows cloud-node-lifecycle);
  # without nodes the node controllers have nothing to do.
  start kube-controller-manager "$KBIN/kube-controller-manager" \
    --kubeconfig="$STATE/kcm.kubeconfig" \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --controllers='*,-node-ipam-controller,-node-lifecycle-controller' \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$kcm_port" \
    --authentication-skip-lookup --profiling=false
  wait_for "kube-controller-manager (the default ServiceAccount)" controllers_ready || return
  has_component kube-scheduler || return 0
  start_pods_runtime "$sched_port" "$kwok_port"
}

# supervise: starts the components as children of this process, prints the
# export line once they are ready, and stops them when told to or when
# something goes wrong; it exits only after they are gone.
supervise() {
  PKI="$STATE/pki"
  echo $$ >"$STATE/kube-up.pid"
  trap 'stop_components; rm -f "$STATE/ready" "$STATE/kube-up.pid"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  trap 'exit 129' HUP
  write_credentials

  log "starting control plane $KUBE_VERSION in $STATE"
  DEADLINE=$((SECONDS + TIMEOUT))
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    start_all || rc=$?
    ((rc == 0)) && break
    stop_components
    ((rc == 2 && attempt < 3)) || die "control plane did not start (logs in $STATE)"
  done
  touch "$STATE/ready"
  log "control plane ready in ${SECONDS}s; stop it with: scripts/kube-down.sh $STATE"
  echo "export KUBECONFIG=$STATE/kubeconfig"

  local dead
  while :; do
    if owner_gone; then
      log "owner process $KUBE_UP_OWNER_PID exited; stopping the control plane"
      exit 0
    fi
    if dead="$(component_died)"; then
      echo "error: $dead exited; stopping the control plane" >&2
      show_logs "$dead"
      exit 1
    fi
    sleep 1
  done
}

case "${1:-}" in
  --supervise)
    STATE=$2
    supervise
    ;;
  --foreground)
    "$ROOT/scripts/build-controlplane.sh" kubernetes etcd kwok
    prepare_state "${2:-${KUBE_STATE_DIR:-}}"
    # Same process, with the absolute state dir on its command line (that is
    # how kube-down.sh recognises it).
    exec bash "$SELF" --supervise "$STATE"
    ;;
  *)
    "$ROOT/scripts/build-controlplane.sh" kubernetes etcd kwok
    prepare_state "${1:-${KUBE_STATE_DIR:-}}"
    nohup bash "$SELF" --supervise "$STATE" >"$STATE/kube-up.log" 2>&1 </dev/null &
    supervisor=$!
    until [[ -f "$STATE/ready" ]]; do
      if ! pid_alive "$supervisor"; then
        tail -n 80 "$STATE/kube-up.log" >&2
        die "control plane did not start (logs in $STATE)"
      fi
      sleep 0.5
    done
    log "control plane ready; stop it with: scripts/kube-down.sh $STATE"
    echo "export KUBECONFIG=$STATE/kubeconfig"
    ;;
esac
