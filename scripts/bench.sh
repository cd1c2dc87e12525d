#!/usr/bin/env bash
# make bench: BenchmarkUpgrade (test/e2e/bench_test.go) on the local control
# plane — for each upgrade shape, the tool's plan, `helm upgrade
# --dry-run=server` and the floor (`helm template` + one LIST of the objects'
# kinds), each a whole process: median wall time, CPU time and peak RSS of
# BENCH_RUNS runs (default 3). Prints them as a table with ratios to the
# floor, the tool's plan of the same release installed by Helm 4 (server-side
# apply) beside its plan of the Helm 3 release, with the dry-run requests of
# each and the ratios, and the tool's slope between 1000 and 5000 objects,
# then what the drop-in helm adds to a command it passes through
# (BenchmarkShimPassThrough) and a 10-release helmfile diff through it beside
# 10 helm upgrade --dry-run=server (BenchmarkShimHelmfileDiff, when helmfile
# is in the cache), the rollback and uninstall plans and log of a
# 100-revision release beside their floors (BenchmarkVerbs), the chart bump
# under each admission configuration (BenchmarkAdmission), what the
# rollout watch adds after Helm returns (BenchmarkWatch), status -A of 50
# releases beside kubectl get (BenchmarkStatus), then (BENCH_STAGES=0 skips
# it) the Go benchmarks of the pure stages.
# The contenders of every row run in turns, round after round (a shape: the
# tool's plan of the Helm 3 release, of the Helm 4 release, the floor, helm
# --dry-run=server, then again), so that a load that comes and goes weighs
# on each alike (docs/performance.md#measuring).
# How long each part took, 2026-12-03, BENCH_RUNS=3, on this 2-core machine
# shared with five other sessions (load average 13-22, so several times an
# idle run's), each part with its test build and control plane start:
# upgrade 1000-object shapes 254 s; the 5000-object shape did not finish
# (twice, Helm 4's install of the 5000 objects failed after about 4 minutes,
# the API server timing out Service applies under that load: its three
# rounds, helm --dry-run=server about a minute each, would add some 5
# minutes); shim pass-through 91 s (helmfile not in the cache: no diff row);
# verbs 286 s (most of it installing the 1000-object release and the log's
# 100 revisions); watch 257 s; status 125 s; the stage benchmarks were not
# run (seven Go benchmarks of a second or so each, and their build). In all
# about half an hour at that load: well inside an hour. On an idle 2-core
# machine the same day (BENCH_STAGES=0, helmfile not in the cache), the
# whole bench took 12.5 minutes.
#   BENCH_RUNS=5 make bench         more runs per median
#   BENCH=1000-objects make bench  only the shapes matching (a -bench regexp)
#   BENCH_TOOL=/path/to/binary      measure that binary instead of this tree's
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export BENCH_RUNS="${BENCH_RUNS:-3}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -count=1 -run '^$' -bench "Upgrade/${BENCH:-}" -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" '
  /^BenchmarkUpgrade\/.*ns\/op/ {
    n = split($1, part, "/")
    shape = part[2] "/" part[3]
    who = part[4]; sub(/-[0-9]+$/, "", who)
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "ns/op") t[shape, who] = $i / 1e9
      if ($(i+1) == "peak-RSS-MiB") m[shape, who] = $i
      if ($(i+1) == "CPU-s") cpu[shape, who] = $i
      if ($(i+1) == "dry-runs") dry[shape, who] = $i
    }
    if (!(shape in seen)) { seen[shape] = 1; order[++shapes] = shape }
  }
  function cell(s, w) { return ((s, w) in t) ? sprintf("%.2f s, %.2f CPU-s, %.0f MiB", t[s, w], cpu[s, w], m[s, w]) : "—" }
  function planCell(s, w) { return ((s, w) in t) ? sprintf("%.2f s, %.2f CPU-s, %.0f MiB, %d dry-runs", t[s, w], cpu[s, w], m[s, w], dry[s, w]) : "—" }
  function versus(a, b) { return (b > 0) ? sprintf("%.2f×", a / b) : "—" }
  function ratio(s, w) { return ((s, w) in t && t[s, "floor"] > 0) ? sprintf("%.2f×", t[s, w] / t[s, "floor"]) : "—" }
  END {
    if (!shapes) { print "bench: no results"; exit 1 }
    printf "\nMedians of %d runs, whole processes timed in turns (wall time, CPU-seconds user + system, peak RSS):\n\n", runs
    print "| upgrade | this tool | helm upgrade --dry-run=server | floor (helm template + LIST) | tool / floor | helm / floor |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= shapes; i++) {
      s = order[i]; label = s; gsub("/", ", ", label); gsub("-", " ", label)
      printf "| %s | %s | %s | %s | %s | %s |\n", label, cell(s, "tool"), cell(s, "helm-dry-run-server"), cell(s, "floor"), ratio(s, "tool"), ratio(s, "helm-dry-run-server")
    }
    printf "\nPlans of the release installed by Helm 3 and of the same release installed by Helm 4 (server-side apply): medians of wall time and CPU-seconds (user+system), dry-run requests of one more run:\n\n"
    print "| upgrade | Helm 3 release | Helm 4 release | Helm 4 / Helm 3 (wall) | Helm 4 / Helm 3 (CPU) |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= shapes; i++) {
      s = order[i]; label = s; gsub("/", ", ", label); gsub("-", " ", label)
      if (!((s, "tool-helm4") in t)) continue
      printf "| %s | %s | %s | %s | %s |\n", label, planCell(s, "tool"), planCell(s, "tool-helm4"),
        versus(t[s, "tool-helm4"], t[s, "tool"]), versus(cpu[s, "tool-helm4"], cpu[s, "tool"])
    }
    small = "1000-objects/150-changed"; large = "5000-objects/750-changed"
    if ((small, "tool") in t && (large, "tool") in t) {
      printf "\nTool slope from 1000 to 5000 objects (15%% changed): %+.2f s and %+.1f MiB per 1000 objects (at 1000: %.2f s, %.0f MiB; at 5000: %.2f s, %.0f MiB)\n",
        (t[large, "tool"] - t[small, "tool"]) / 4, (m[large, "tool"] - m[small, "tool"]) / 4,
        t[small, "tool"], m[small, "tool"], t[large, "tool"], m[large, "tool"]
    }
  }' "$out"

# The chart bump of a 1000-object release in the admission configurations a
# production cluster has (BenchmarkAdmission): none, one
# ValidatingAdmissionPolicy matching every update, the project's guard, a
# validating webhook matching every update (a loopback server the bench
# starts); the tool's plan, its dry-runs, and the floor, in turns
# (BENCH_BASELINE: another build of the tool beside it).
go test -count=1 -run '^$' -bench 'Admission' -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" '
  /^BenchmarkAdmission\/.*ns\/op/ {
    split($1, part, "/"); shape = part[3]; who = part[4]; sub(/-[0-9]+$/, "", who)
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "ns/op") t[shape, who] = $i / 1e9
      if ($(i+1) == "CPU-s") cpu[shape, who] = $i
      if ($(i+1) == "peak-RSS-MiB") m[shape, who] = $i
      if ($(i+1) == "dry-runs") dry[shape, who] = $i
    }
    if (!(shape in seen)) { seen[shape] = 1; order[++shapes] = shape }
  }
  function cell(s, w) { return ((s, w) in t) ? sprintf("%.2f s, %.2f CPU-s, %.0f MiB", t[s, w], cpu[s, w], m[s, w]) : "—" }
  function plan(s, w) { return ((s, w) in t) ? sprintf("%s, %d dry-runs", cell(s, w), dry[s, w]) : "—" }
  function ratio(a, b) { return (b > 0) ? sprintf("%.2f×", a / b) : "—" }
  END {
    if (!shapes) { print "bench: no admission results"; exit 1 }
    printf "\nThe chart bump of 1000 objects (a label on every one) under each admission configuration, medians of %d runs in turns (the goal with one admitting policy: within 1.5× the floor):\n\n", runs
    print "| admission | this tool | floor (helm template + LIST) | tool / floor (wall) | tool / floor (CPU) | BENCH_BASELINE | baseline / floor (wall) |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= shapes; i++) {
      s = order[i]
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", s, plan(s, "tool"), cell(s, "floor"), ratio(t[s, "tool"], t[s, "floor"]), ratio(cpu[s, "tool"], cpu[s, "floor"]),
        plan(s, "baseline"), ((s, "baseline") in t) ? ratio(t[s, "baseline"], t[s, "floor"]) : "—"
    }
  }' "$out"

# The drop-in helm (its dispatcher, cmd/helm-shim): its cost on a command it
# hands to the real helm, and a 10-release helmfile diff through it beside 10
# sequential helm upgrade --dry-run=server (BenchmarkShim*). helmfile is a
# long build kept off the default path: the row needs it in the cache
# (make orchestrators) or SAFE_UPGRADE_HELMFILE.
helmfile="${SAFE_UPGRADE_HELMFILE:-$(source scripts/lib.sh && echo "$CACHE_DIR")/bin/helmfile-${HELMFILE_VERSION:-v1.8.0}/helmfile}"
if [[ -x "$helmfile" ]]; then export SAFE_UPGRADE_HELMFILE="$helmfile"; else unset SAFE_UPGRADE_HELMFILE; fi
go test -count=1 -run '^$' -bench 'Shim' -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" -v helmfile="${SAFE_UPGRADE_HELMFILE:-}" '
  /^BenchmarkShim(PassThrough|HelmfileDiff)\/.*ns\/op/ {
    split($1, part, "/"); c = part[2]; via = part[3]; sub(/-[0-9]+$/, "", via)
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "ns/op") t[c, via] = $i / 1e6
      if ($(i+1) == "CPU-s") u[c, via] = $i * 1000
    }
    if ($1 ~ /^BenchmarkShimPassThrough/ && !(c in seen)) { seen[c] = 1; order[++n] = c }
  }
  END {
    printf "\nMedians of %d runs, whole processes timed in turns (wall time, CPU time user + system; the shim target: at most +30 ms; on a shared machine CPU-ms is the stable figure):\n\n", runs
    print "| helm command (passed through) | real helm | through the shim | the shim adds |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) {
      c = order[i]
      printf "| %s | %.0f ms, %.0f CPU-ms | %.0f ms, %.0f CPU-ms | %+.0f ms, %+.0f CPU-ms |\n", c, t[c, "helm"], u[c, "helm"], t[c, "shim"], u[c, "shim"], t[c, "shim"] - t[c, "helm"], u[c, "shim"] - u[c, "helm"]
    }
    d = "helmfile-diff"; h = "helm-upgrade-dry-run-server"
    if ((d, "shim") in t && (h, "helm") in t) {
      printf "\n| 10 releases, medians of %d runs (children included) | wall | CPU |\n|---|---|---|\n", runs
      printf "| helmfile diff --concurrency 1 through the shim | %.2f s | %.2f CPU-s |\n", t[d, "shim"] / 1000, u[d, "shim"] / 1000
      printf "| 10 sequential helm upgrade --dry-run=server | %.2f s | %.2f CPU-s |\n", t[h, "helm"] / 1000, u[h, "helm"] / 1000
    } else if (helmfile == "") {
      print "\nhelmfile diff through the shim: skipped, helmfile is not in the cache (make orchestrators builds it, about 1255 CPU-seconds cold)"
    }
  }' "$out"

# The plans of the other verbs and log of a 100-revision release beside
# their floors (BenchmarkVerbs): each tool run and its floor timed in turns.
go test -count=1 -run '^$' -bench 'Verbs' -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" '
  /^BenchmarkVerbs\/.*ns\/op/ {
    n = split($1, part, "/"); row = part[2] ", " part[3]; gsub("-", " ", row)
    who = part[4]; sub(/-[0-9]+$/, "", who)
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "ns/op") t[row, who] = $i / 1e9
      if ($(i+1) == "CPU-s") cpu[row, who] = $i
      if ($(i+1) == "peak-RSS-MiB") m[row, who] = $i
    }
    if (!(row in seen)) { seen[row] = 1; order[++rows] = row }
  }
  function cell(r, w) { return ((r, w) in t) ? sprintf("%.2f s, %.2f CPU-s, %.0f MiB", t[r, w], cpu[r, w], m[r, w]) : "—" }
  function ratio(a, b) { return (b > 0) ? sprintf("%.2f×", a / b) : "—" }
  END {
    if (!rows) { print "bench: no verb results"; exit 1 }
    printf "\nThe other verbs (rollback and uninstall plans --dry-run -o json, log -o json) and their floors, timed in turns, medians of %d runs (floors: rollback, helm get manifest of both revisions + one LIST; uninstall, helm get manifest + one LIST; log, helm history --max 100 -o json, which reads and decodes every stored revision whole, manifests included, in one LIST: all a log has to read; status -A has its own table below):\n\n", runs
    print "| verb | this tool | floor | tool / floor (wall) | tool / floor (CPU) |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= rows; i++) {
      r = order[i]
      printf "| %s | %s | %s | %s | %s |\n", r, cell(r, "tool"), cell(r, "floor"), ratio(t[r, "tool"], t[r, "floor"]), ratio(cpu[r, "tool"], cpu[r, "floor"])
    }
    for (i = 1; i <= rows; i++) {
      r = order[i]
      if (!((r, "by-hand") in t)) continue
      printf "\n%s by hand, what a user runs without the tool to see what each revision changed (helm history + helm get manifest of every revision, the diffs left to the reader), in the same turns: %s; the tool / by hand: %s wall, %s CPU\n",
        r, cell(r, "by-hand"), ratio(t[r, "tool"], t[r, "by-hand"]), ratio(cpu[r, "tool"], cpu[r, "by-hand"])
    }
  }' "$out"

# What the rollout watch adds after Helm returns (BenchmarkWatch).
go test -count=1 -run '^$' -bench 'Watch' -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" '
  /^BenchmarkWatch\/.*watch-ms/ {
    split($1, part, "/"); shape = part[2] ", " part[3]; sub(/-[0-9]+$/, "", shape); gsub("-", " ", shape)
    for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
    printf "\n| watch after Helm returns (median of %d) | time | requests | most LISTs of one kind | most WATCHes of one kind | the whole tool run |\n", runs
    print "|---|---|---|---|---|---|"
    printf "| %s | %d ms | %d | %d | %d | %.2f s, %.2f CPU-s |\n", shape, v["watch-ms"], v["watch-requests"], v["max-LIST/kind"], v["max-WATCH/kind"], v["tool-s"], v["tool-CPU-s"]
  }
  /watch requests per resource/ { sub(/^.*watch requests per resource/, "watch requests per resource"); print }' "$out"

# status -A of many releases beside kubectl get of the same kinds
# (BenchmarkStatus).
go test -count=1 -run '^$' -bench 'Status' -benchtime 1x -timeout 60m ./test/e2e 2>&1 |
  grep -v '^I[0-9]' | tee "$out"
awk -v runs="$BENCH_RUNS" '
  /^BenchmarkStatus\/.*ns\/op/ {
    split($1, part, "/"); shape = part[2]; who = part[3]; sub(/-[0-9]+$/, "", who); gsub("-", " ", shape)
    t[who] = $3 / 1e6; for (i = 5; i < NF; i += 2) if ($(i+1) == "CPU-s") u[who] = $i
  }
  END {
    if (!("tool" in t) || !("floor" in t)) { print "status bench: no results"; exit 1 }
    printf "\n| status -A, %s (median of %d, in turn) | wall | CPU | wall ratio to the floor (target <= 1.5) | CPU ratio |\n", shape, runs
    print "|---|---|---|---|---|"
    printf "| status -A -o json | %.2f s | %.2f CPU-s | %.2f | %.2f |\n", t["tool"] / 1000, u["tool"], t["tool"] / t["floor"], u["tool"] / u["floor"]
    if ("baseline" in t) printf "| status -A -o json, BENCH_BASELINE | %.2f s | %.2f CPU-s | %.2f | %.2f |\n", t["baseline"] / 1000, u["baseline"], t["baseline"] / t["floor"], u["baseline"] / u["floor"]
    printf "| kubectl get (the same kinds) -A -o json | %.2f s | %.2f CPU-s | 1 | 1 |\n", t["floor"] / 1000, u["floor"]
  }' "$out"

if [[ "${BENCH_STAGES:-1}" != 0 ]]; then
  echo
  go test -count=1 -run '^$' -bench . -benchmem ./pkg/...
fi
