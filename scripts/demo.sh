#!/usr/bin/env bash
# The demo: build the tool, start the local control plane, install
# testdata/charts/demo (v1) with the real helm v3, then ask helm-safe-upgrade
# what upgrading to testdata/charts/demo-v2 would do. v2 grows the database
# volume (an immutable StatefulSet field) and changes the web image (a rolling
# update), so the expected verdict is "blocked" (exit 2). Acknowledged, the
# upgrade is applied and its rollout watched: kwok runs the pods, so the web
# pods are seen replaced and the database pod kept.
#
# Usage: scripts/demo.sh        (KEEP_CLUSTER=1 leaves the control plane running)
#        USE_CLUSTER=1 scripts/demo.sh
#   runs against the current context of your KUBECONFIG instead (kind, k3d,
#   minikube, a dev cluster): no control plane is built, the demo works in a
#   namespace of its own and removes it, and its release, at the end. Without
#   USE_CLUSTER=1 your kubeconfig is never read.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

TOOL="$ROOT/bin/helm-safe-upgrade"
HELM="$(helm_bin_dir "$HELM3_VERSION")/helm"
KUBECTL="$(kube_bin_dir)/kubectl"
NS=demo

if [[ -t 1 ]]; then
  section() { printf '\n\033[1m### %s\033[0m\n' "$*"; }
else
  section() { printf '\n### %s\n' "$*"; }
fi

make --no-print-directory build

if [[ "${USE_CLUSTER:-}" == 1 ]]; then
  KUBE_COMPONENTS=kubectl scripts/build-controlplane.sh kubernetes helm3
  # A private copy of the current context only, so the demo cannot drift to
  # another context; the user's files are only read.
  STATE="$(mktemp -d)"
  "$KUBECTL" config view --minify --flatten >"$STATE/kubeconfig" ||
    die "USE_CLUSTER=1: no usable current context in your kubeconfig"
  chmod 600 "$STATE/kubeconfig"
  NS="safe-upgrade-demo-$(openssl rand -hex 3)"
  log "using your cluster ($("$KUBECTL" config current-context)); the demo works in namespace $NS and deletes it at the end"
  cleanup_user_cluster() {
    "$HELM" uninstall demo -n "$NS" --kubeconfig "$STATE/kubeconfig" >/dev/null 2>&1 || true
    "$KUBECTL" --kubeconfig "$STATE/kubeconfig" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
    rm -rf "$STATE"
  }
  trap cleanup_user_cluster EXIT
  trap 'exit 130' INT TERM
else
  scripts/build-controlplane.sh demo
  mkdir -p "$CACHE_DIR/run"
  STATE="$(mktemp -d "$CACHE_DIR/run/demo-XXXXXX")"
fi
if [[ "${USE_CLUSTER:-}" == 1 ]]; then
  :
elif [[ "${KEEP_CLUSTER:-}" != 1 ]]; then
  trap 'rc=$?; scripts/kube-down.sh "$STATE"
        if ((rc == 0)); then rm -rf "$STATE"; else log "control-plane logs kept in $STATE"; fi' EXIT
  trap 'exit 130' INT TERM
  # Also stops the cluster if this script is killed outright.
  export KUBE_UP_OWNER_PID=$$
fi
[[ "${USE_CLUSTER:-}" == 1 ]] || scripts/kube-up.sh "$STATE" >/dev/null

# Helm and the tool see only this cluster and a private helm home.
unset HELM_KUBECONTEXT HELM_NAMESPACE HELM_KUBEAPISERVER HELM_KUBETOKEN
export KUBECONFIG="$STATE/kubeconfig"
export HELM_CACHE_HOME="$STATE/helm/cache" HELM_CONFIG_HOME="$STATE/helm/config" HELM_DATA_HOME="$STATE/helm/data"
export HELM_PLUGINS="$HELM_DATA_HOME/plugins"

if [[ "${USE_CLUSTER:-}" != 1 ]]; then
  # No storage provisioner here: a volume bound in advance to the database's
  # claim lets its pod be scheduled, and then run (kwok plays the kubelet).
  "$KUBECTL" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: $NS-demo-db-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/$NS-demo-db-data}
  claimRef: {namespace: $NS, name: data-demo-db-0}
EOF
fi

section "helm install demo testdata/charts/demo (v1.0.0) -n $NS"
"$HELM" install demo testdata/charts/demo -n "$NS" --create-namespace

section "live objects (kubectl get, from the API server)"
"$KUBECTL" get statefulset,deployment,replicaset,service,configmap,secret,pvc -n "$NS" \
  -l app.kubernetes.io/instance=demo -o wide

section "helm-safe-upgrade demo testdata/charts/demo-v2 -n $NS --dry-run"
rc=0
"$TOOL" demo testdata/charts/demo-v2 -n "$NS" --dry-run || rc=$?
case $rc in
  0) log "exit 0: the gate lets the upgrade through" ;;
  2) log "exit 2: blocked, destructive changes need acknowledging (the expected demo result)" ;;
  3) log "exit 3: changes pending that the gate lets through" ;;
  *) die "helm-safe-upgrade failed (exit $rc)" ;;
esac

section "plain helm upgrade would fail half-way; helm-safe-upgrade applies it once acknowledged"
FP="$("$TOOL" demo testdata/charts/demo-v2 -n "$NS" --dry-run -o json 2>/dev/null |
  sed -n 's/.*"fingerprint": "\([0-9a-f]\{12\}\)".*/\1/p' | head -1)" || true
[[ -n "$FP" ]] || die "no fingerprint in the plan"
uids() { "$KUBECTL" get pods,pvc -n "$NS" -l app.kubernetes.io/component=db \
  -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\n"}{end}'; }
before="$(uids)"
echo "+ helm-safe-upgrade demo testdata/charts/demo-v2 -n $NS --ack StatefulSet/$NS/demo-db@$FP"
# stderr shows the rollout: the web pods replaced, the database pod kept.
"$TOOL" demo testdata/charts/demo-v2 -n "$NS" --ack "StatefulSet/$NS/demo-db@$FP" -o json >/dev/null

section "after the upgrade: the database pod and its claim are the same objects (same UIDs)"
after="$(uids)"
printf 'before:\n%s\nafter:\n%s\n' "$before" "$after"
[[ "$before" == "$after" ]] || die "the database pod or claim was replaced"
"$HELM" history demo -n "$NS"

if [[ "${KEEP_CLUSTER:-}" == 1 && "${USE_CLUSTER:-}" != 1 ]]; then
  log "control plane kept running; use it with:"
  echo "export KUBECONFIG=$KUBECONFIG"
  log "stop it with: scripts/kube-down.sh $STATE"
fi
