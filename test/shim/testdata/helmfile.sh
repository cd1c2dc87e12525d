#!/usr/bin/env bash
# Makes exactly the helm calls helmfile v1 makes for one release (GUIDE
# §6b): `helmfile diff` and the diff half of `apply` run helm diff upgrade
# --allow-unreleased with --detailed-exitcode (exit 2: changes); `sync` and
# the sync half of `apply` run helm upgrade --install. helm is the one on
# PATH, as for helmfile without helmBinary.
# Usage: helmfile.sh diff|sync|apply   (REL, CHART, NS, VALUES from the environment)
set -uo pipefail
helm version --short >/dev/null || exit 1

diff() {
  helm diff upgrade --allow-unreleased "$REL" "$CHART" --namespace "$NS" --values "$VALUES" \
    --reset-values --detailed-exitcode
}

sync() {
  helm upgrade --install "$REL" "$CHART" --namespace "$NS" --values "$VALUES" --reset-values --history-max 10
}

case "$1" in
  diff) diff ;;
  sync) sync ;;
  apply)
    diff
    code=$?
    case "$code" in
      0) echo "helmfile.sh: no changes"; exit 0 ;;
      2) sync ;;
      *) exit "$code" ;;
    esac
    ;;
  *) echo "usage: helmfile.sh diff|sync|apply" >&2; exit 1 ;;
esac
