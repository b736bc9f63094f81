#!/usr/bin/env bash
# Where PostgreSQL intake spends its statements: starts a private PostgreSQL
# cluster of its own (a temporary directory, port 55432, loopback only) with
# pg_stat_statements preloaded, runs BenchmarkSendIntake against it, and
# prints the statements by total time. The machine's own PostgreSQL server
# is not touched. Usage: bench/pg-statements.sh [messages, default 3000]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3000}
work=$(mktemp -d); chmod 755 "$work"
. bench/privatepg.sh
cleanup() { private_pg_stop "$work"; rm -rf "$work"; }
trap cleanup EXIT
private_pg_start "$work" 55432 "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
url="postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable"
psql "$url" -qc 'CREATE EXTENSION pg_stat_statements'
psql "$url" -qc 'CREATE DATABASE bench'
burl="postgres://postgres@127.0.0.1:55432/bench?sslmode=disable"
psql "$burl" -qc 'CREATE EXTENSION pg_stat_statements'
go test -c -o "$work/app.test" ./internal/app/
# The benchmark's set-up (migrations, account, domain) is reset away: what is
# left is the intake of $n messages.
POSTLINE_TEST_DATABASE_URL="$burl" POSTLINE_BENCH_RESET_STATEMENTS=1 \
  "$work/app.test" -test.run '^$' -test.bench 'BenchmarkSendIntake/postgres' -test.benchtime "${n}x"
psql "$url" -P pager=off -c "
SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
       round((total_exec_time / calls)::numeric, 3) AS mean_ms,
       round(calls::numeric / $n, 2) AS per_msg,
       left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
FROM pg_stat_statements WHERE calls > 0 AND dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
ORDER BY total_exec_time DESC LIMIT 30"
