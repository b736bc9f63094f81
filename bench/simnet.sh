#!/usr/bin/env bash
# Issue 29's delivery benchmark against the simulated internet (internal/simnet,
# loopback only): the built `postline serve` delivers 100,000 messages to 1,000
# domains of 10 providers with published limits, told them by a shaping file.
# Reports time against the lower bound the limits imply, violations, duplicates
# and per-provider figures. Kept out of `go test ./...` by the simnetbench tag.
#   POSTLINE_BENCH_MESSAGES=10000 bench/simnet.sh     a quick run (~30 s bound)
#   POSTLINE_TEST_DATABASE_URL=postgres://...          on PostgreSQL instead of SQLite
#   POSTLINE_BENCH_PROVIDERS=outlook,yahoo             only those providers
#   POSTLINE_BENCH_ORDER=domain                        recipients sorted by domain, not interleaved
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -tags simnetbench -run '^TestSimnetDeliveryBenchmark$' -count 1 -timeout 90m -v ./internal/simnet/
