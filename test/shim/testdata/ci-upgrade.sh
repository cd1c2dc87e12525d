#!/usr/bin/env bash
# A CI script's deploy step: the pattern of the incident (a forced upgrade,
# waiting for the rollout). Extra arguments are passed on (e.g. --dry-run).
set -euo pipefail
helm upgrade --install "$REL" "$CHART" -n "$NS" --force --wait --timeout 10m "$@"
