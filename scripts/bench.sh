#!/usr/bin/env bash
# make bench: plan time vs. floor on a 1000-object release on the local
# control plane (BenchmarkPlan1000 / BenchmarkFloor1000 in test/e2e), then
# the Go benchmarks of the pure stages (split, diff, classify, report).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCHTIME="${BENCHTIME:-3x}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -count=1 -run '^$' -bench 'Plan1000|Floor1000' -benchtime "$BENCHTIME" -timeout 30m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk '
  /^BenchmarkPlan1000/  { plan = $3; rss = $5 }
  /^BenchmarkFloor1000/ { floor = $3 }
  END {
    if (!plan || !floor) { print "bench: missing results"; exit 1 }
    printf "\nplan  %.2f s per 1000-object plan (peak RSS %s MB)\nfloor %.2f s (in-process render + parallel GET of the same objects)\nratio %.2f (target <= 1.5)\n",
      plan / 1e9, rss, floor / 1e9, plan / floor
  }' "$out"

echo
go test -count=1 -run '^$' -bench . -benchmem ./pkg/...
