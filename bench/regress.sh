#!/usr/bin/env bash
# Did a change slow anything down? Runs the in-process benchmarks of the request path, intake,
# log pages, the log stream and delivery against its ceiling, for two trees in the same run:
# BASE (a commit, default the one named in BASE=) and the working tree, alternating, R rounds.
# Compare each figure as a ratio within one round: the machine's speed moves between rounds.
#
# Usage: BASE=<commit> bench/regress.sh [rounds, default 3]
# Log pages and the stream read POSTLINE_BENCH_EVENTS entries (default here 100,000; the
# "Delivery log" section of BENCHMARKS.md uses 1,000,000). SQLite only. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?set BASE to the commit to compare with}"
rounds=${1:-3}
export POSTLINE_BENCH_EVENTS=${POSTLINE_BENCH_EVENTS:-100000}
work=$(mktemp -d)
cleanup() { git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
git worktree add --detach -q "$work/base" "$BASE"
(cd "$work/base" && go test -c -o "$work/base.test" ./internal/app/)
go test -c -o "$work/head.test" ./internal/app/
echo "base $(git rev-parse --short "$BASE"), head $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + uncommitted changes'); $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # label, benchmark flags...
  local label=$1; shift
  (cd internal/app && "$work/$label.test" -test.run '^$' -test.benchmem=false "$@" 2>/dev/null) |
    grep -E '^Benchmark' | sed "s/^/$label	/"
}
for r in $(seq "$rounds"); do
  echo "== round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  for label in base head; do
    run "$label" -test.bench 'BenchmarkRequests' -test.benchtime 5000x
    run "$label" -test.bench 'BenchmarkSendIntake/sqlite' -test.benchtime 2000x
    run "$label" -test.bench 'BenchmarkLogs/sqlite/(page-100|recipient|event_type|stream-500k)$' -test.benchtime 40x -test.timeout 30m
    run "$label" -test.bench 'BenchmarkDeliveryVsRawSMTP/(postline|build-sign-send)$' -test.benchtime 3000x
  done
done
