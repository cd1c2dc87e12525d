#!/usr/bin/env bash
# Makes exactly the helm calls Helmsman v3 makes for one release (GUIDE
# §6b): it refuses to start unless `helm plugin list` shows diff, plans with
# helm diff upgrade --suppress-secrets, and applies with helm upgrade
# --install, adding --force when run with --force-upgrades (the flag of the
# "recreated my Kafka StatefulSet" report). reinstall is its move of a
# release to another namespace: v3.18.0 uninstalls the release it manages in
# OLD_NS as untracked (decision_maker.go: cleanUntrackedReleases), then
# installs it in NS; test/orchestrators runs real Helmsman doing it.
# Usage: helmsman.sh plan|apply|apply-force|reinstall   (REL, CHART, NS, VALUES, OLD_NS from the environment)
set -uo pipefail
helm version --short >/dev/null || exit 1
if ! helm plugin list | grep -q diff; then
  echo "helmsman.sh: helm diff plugin is not installed" >&2
  exit 1
fi

case "$1" in
  plan) helm diff upgrade "$REL" "$CHART" --namespace "$NS" -f "$VALUES" --suppress-secrets --no-color --context 3 ;;
  apply) helm upgrade --install "$REL" "$CHART" --namespace "$NS" -f "$VALUES" --timeout 300s --history-max 5 ;;
  apply-force) helm upgrade --install "$REL" "$CHART" --namespace "$NS" -f "$VALUES" --timeout 300s --history-max 5 --force ;;
  reinstall) helm uninstall --namespace "$OLD_NS" "$REL" &&
    helm upgrade "$REL" "$CHART" --install --namespace "$NS" -f "$VALUES" --timeout 300s --history-max 5 ;;
  *) echo "usage: helmsman.sh plan|apply|apply-force|reinstall" >&2; exit 1 ;;
esac
