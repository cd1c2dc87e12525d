#!/usr/bin/env bash
# Stops exactly the processes scripts/kube-up.sh started for a state dir (from
# its *.pid files, each checked to still be ours) and waits until they are gone.
# The state dir itself (logs, audit log) is kept.
#
# Usage: scripts/kube-down.sh [STATE_DIR]
#   STATE_DIR defaults to $KUBE_STATE_DIR, else the folder of $KUBECONFIG when
#   kube-up.sh wrote it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="${1:-${KUBE_STATE_DIR:-}}"
if [[ -z "$STATE" && -n "${KUBECONFIG:-}" && -f "$(dirname "$KUBECONFIG")/audit-policy.yaml" ]]; then
  STATE="$(dirname "$KUBECONFIG")"
fi
[[ -n "$STATE" ]] || die "usage: scripts/kube-down.sh STATE_DIR (the folder kube-up.sh printed)"
[[ -d "$STATE" ]] || die "no such state dir: $STATE"
STATE="$(cd "$STATE" && pwd)"

# The supervisor stops the components in order (kwok, scheduler, controller
# manager, API server, etcd) and reaps them; whatever it leaves is stopped
# here, same order.
stop_pid_file "$STATE/kube-up.pid" "$STATE" 90
for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  stop_pid_file "$STATE/$c.pid" "$STATE"
done
log "control plane in $STATE stopped"
