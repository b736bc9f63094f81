#!/usr/bin/env bash
# Several `postline serve` processes on one PostgreSQL database (issue 33, item 5): what sharing
# the delivery queue costs. The processes run on this one machine; the point is contention on
# the database, not cores.
#
# For each process count P (default 1 2 4): a fresh database, P serve processes with their own
# HTTP and submission ports and data directories but one POSTLINE_DATABASE_URL and one secret
# key, N messages (default 20,000) submitted over SMTP on CLIENTS connections (default 8) spread
# round robin over the P submission ports (bench/mailload), relayed DKIM-signed to one counting
# sink on loopback. Printed per P:
#   intake       msgs/s from the first connection to the last submission accepted
#   delivery     msgs/s from the first connection to the last arrival at the sink
#   CPU/msg      CPU of all serve processes together, per message
#   xacts/msg    xact_commit + xact_rollback of that database (pg_stat_database), per message
#   claims/msg   postline_delivery_claims_total summed over the processes' /metrics, per message
#                (and the share of those that came back empty)
#   lock waits   pg_stat_activity sampled every 100 ms: samples with a backend of that database
#                waiting on a heavyweight lock (wait_event_type Lock), the most at once
#   dups         arrivals whose Message-ID the sink had seen before (a message sent twice)
# Then, per P, the most common waits of non-idle backends (Lock, LWLock, IO: where commits and
# claims wait) with the statement's first words, and every heavyweight-lock wait seen.
#
# Usage: N=20000 bench/multiproc.sh [P ...]
# POSTLINE_TEST_DATABASE_URL names a database to connect to for creating, dropping and watching
# the benchmark's own databases (named ${DB_PREFIX:-multiproc}_<pid>_p<P>, dropped on exit).
# PRIVATE_PG=1 instead starts a PostgreSQL cluster of its own (as bench/pg-statements.sh: a
# temporary directory, port 55433, loopback only, pg_stat_statements loaded), which no other
# work on the machine shares (NOTIFY's commit lock is one per cluster), and prints each run's
# statements by calls per message.
# Ports from BASE_PORT (default 3700): sink, its status, then HTTP and submission per process.
# Loopback only. Needs psql, curl and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
counts=${*:-1 2 4}
n=${N:-20000}
clients=${CLIENTS:-8}
base=${BASE_PORT:-3700}
private=${PRIVATE_PG:-}
[ -n "$private" ] || : "${POSTLINE_TEST_DATABASE_URL:?set it to a PostgreSQL URL this script may create databases from}"

work=$(mktemp -d)
chmod 755 "$work"
dbs=()
pids=()
. bench/privatepg.sh
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "$private" ]; then
    private_pg_stop "$work"
  else
    for db in "${dbs[@]}"; do
      psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" 2>/dev/null || true
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ -n "$private" ]; then
  private_pg_start "$work" 55433 "-c max_connections=200 -c shared_preload_libraries=pg_stat_statements"
  admin="postgres://postgres@127.0.0.1:55433/postgres?sslmode=disable"
  psql -q "$admin" -c 'CREATE EXTENSION pg_stat_statements'
else
  admin=$POSTLINE_TEST_DATABASE_URL
fi
go build -o "$work/postline" ./cmd/postline
go build -o "$work/mailload" ./bench/mailload
hz=$(getconf CLK_TCK)
echo "$(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$(psql -Atc 'SHOW server_version' "$admin" | cut -d' ' -f1), synchronous_commit $(psql -Atc 'SHOW synchronous_commit' "$admin")"

wait_port() {
  for _ in $(seq 300); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.05; done
  echo "nothing listens on $1:"; cat "$work"/*/serve.log; exit 1
}
cpu() { local f; read -r -a f <"/proc/$1/stat"; echo $((f[13] + f[14])); }
cpu_all() { local t=0 p; for p in "${pids[@]}"; do t=$((t + $(cpu "$p"))); done; echo "$t"; }
xacts() { psql -Atc "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$1'" "$admin"; }
# metric NAME_WITH_LABELS: the sum of that series over the processes' /metrics.
metric() {
  local i t=0 v
  for ((i = 0; i < ${#pids[@]}; i++)); do
    v=$(curl -fsS "http://127.0.0.1:$((base + 10 + i))/metrics" | awk -v s="$1" '$1 == s {print $2}')
    t=$(echo "$t + ${v:-0}" | bc)
  done
  echo "$t"
}
claims() { echo "$(metric 'postline_delivery_claims_total{result="claimed"}') $(metric 'postline_delivery_claims_total{result="empty"}')"; }
# sample DB STOPFILE: one psql session that reads pg_stat_activity every 100 ms until STOPFILE
# exists (then psql reads its end of input and quits); a line
# "S locks nonidle total" per sample, then "W type event query" per non-idle backend that waits
# (a Lock wait names the lock: "object pg_database 0" is the one NOTIFY takes at commit,
# "relation OID" a table of the benchmark's database).
sample() {
  while [ ! -e "$2" ]; do
    echo "SELECT 'S', count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) FILTER (WHERE state <> 'idle'), count(*)
      FROM pg_stat_activity WHERE datname = '$1';
      SELECT 'W', a.wait_event_type, a.wait_event || COALESCE(' ' || l.what, ''), left(regexp_replace(a.query, '\\s+', ' ', 'g'), 48)
      FROM pg_stat_activity a LEFT JOIN LATERAL (SELECT COALESCE(classid::regclass || ' ' || objid, relation::text)
        AS what FROM pg_locks WHERE pid = a.pid AND NOT granted LIMIT 1) l ON true
      WHERE a.datname = '$1' AND a.state <> 'idle' AND a.wait_event_type IS NOT NULL;"
    sleep 0.1
  done | psql -qAt -F $'\t' "$admin"
}

"$work/mailload" sink -addr "127.0.0.1:$base" -status "127.0.0.1:$((base + 1))" &
wait_port "$base"
summary=$work/summary
printf '| processes | intake msgs/s | delivery msgs/s | CPU per message | xacts per message | claims per message (empty) | lock-wait samples | most waiters | backends (max) | sent twice |\n|---|---|---|---|---|---|---|---|---|---|\n' >"$summary"
for p in $counts; do
  db="${DB_PREFIX:-multiproc}_$$_p$p"
  psql -q "$admin" -c "CREATE DATABASE $db"
  dbs+=("$db")
  export POSTLINE_DATABASE_URL
  POSTLINE_DATABASE_URL=$(echo "$admin" | sed -E "s#/[^/?]+(\?|$)#/$db\1#")
  export POSTLINE_SECRET_KEY
  POSTLINE_SECRET_KEY=$(head -c32 /dev/urandom | base64)
  export POSTLINE_LOG_LEVEL=warn POSTLINE_SUBMISSION_ALLOW_PLAIN_AUTH=true
  export POSTLINE_RATE_DOMAIN_PER_MINUTE=100000000 POSTLINE_RETRY_SCHEDULE=30s,30s,30s,30s
  export POSTLINE_DATA_DIR=$work/p$p-0
  mkdir -p "$POSTLINE_DATA_DIR"
  "$work/postline" user create bench >/dev/null
  key=$("$work/postline" key create bench | grep -o 'pl_[A-Za-z0-9_-]*' | head -1)
  "$work/postline" domain add bench shop.example --smtp-host 127.0.0.1 --smtp-port "$base" --smtp-tls none >/dev/null
  "$work/postline" domain verify shop.example --force >/dev/null
  pids=()
  addrs=
  for ((i = 0; i < p; i++)); do
    dir=$work/p$p-$i
    mkdir -p "$dir"
    POSTLINE_DATA_DIR=$dir POSTLINE_ADDR=127.0.0.1:$((base + 10 + i)) \
      POSTLINE_SUBMISSION_LISTEN=127.0.0.1:$((base + 30 + i)) "$work/postline" serve >"$dir/serve.out" 2>"$dir/serve.log" &
    pids+=($!)
    addrs+=${addrs:+,}127.0.0.1:$((base + 30 + i))
  done
  for ((i = 0; i < p; i++)); do wait_port $((base + 30 + i)); wait_port $((base + 10 + i)); done
  sleep 2 # the startup's own transactions (migration checks, first polls) settle and are flushed

  [ -n "$private" ] && psql -qAt "$admin" -c 'SELECT pg_stat_statements_reset()' >/dev/null
  sample "$db" "$work/stop-$p" >"$work/samples-$p" &
  sampler=$!
  cpu0=$(cpu_all) x0=$(xacts "$db")
  read -r c0 e0 <<<"$(claims)"
  d0=$(curl -fsS "http://127.0.0.1:$((base + 1))/" | cut -d' ' -f3)
  line=$("$work/mailload" send -addr "$addrs" -n "$n" -c "$clients" -from orders@shop.example \
    -status "127.0.0.1:$((base + 1))" -auth "bench:$key" -timeout 60m)
  cpu1=$(cpu_all)
  read -r c1 e1 <<<"$(claims)"
  touch "$work/stop-$p"
  wait "$sampler"
  sleep 2 # backends report their counts when idle (at most a second late); a late duplicate arrives
  x1=$(xacts "$db")
  d1=$(curl -fsS "http://127.0.0.1:$((base + 1))/" | cut -d' ' -f3)

  submitted=$(echo "$line" | awk -F'\t' '{sub(/submitted /, "", $3); sub(/s$/, "", $3); print $3}')
  delivered=$(echo "$line" | awk -F'\t' '{sub(/delivered /, "", $4); sub(/s$/, "", $4); print $4}')
  read -r lockSamples maxLocks maxBackends samples < <(awk -F'\t' '$1 == "S" {s++; if ($2 > 0) l++; if ($2 > m) m = $2; if ($4 > b) b = $4}
    END {print l + 0, m + 0, b + 0, s + 0}' "$work/samples-$p")
  printf '| %d | %.0f | %.0f | %.2f ms | %.1f | %.2f (%.2f) | %d of %d | %d | %d | %d |\n' "$p" \
    "$(echo "$n / $submitted" | bc -l)" "$(echo "$n / $delivered" | bc -l)" \
    "$(echo "($cpu1 - $cpu0) * 1000 / $hz / $n" | bc -l)" "$(echo "($x1 - $x0) / $n" | bc -l)" \
    "$(echo "($c1 + $e1 - $c0 - $e0) / $n" | bc -l)" "$(echo "($e1 - $e0) / $n" | bc -l)" \
    "$lockSamples" "$samples" "$maxLocks" "$maxBackends" "$((d1 - d0))" >>"$summary"
  echo "P=$p: $line"
  echo "P=$p: most common waits of non-idle backends over $samples samples (count, type, event, statement):"
  awk -F'\t' '$1 == "W" {c[$2 "\t" $3 "\t" $4]++} END {for (k in c) print c[k] "\t" k}' "$work/samples-$p" |
    sort -rn | head -8 | sed 's/^/    /'
  echo "P=$p: every heavyweight-lock wait (count, lock, statement):"
  awk -F'\t' '$1 == "W" && $2 == "Lock" {c[$3 "\t" $4]++} END {for (k in c) print c[k] "\t" k}' "$work/samples-$p" |
    sort -rn | sed 's/^/    /'
  if [ -n "$private" ]; then
    echo "P=$p: statements by calls per message (calls, ms, statement):"
    psql -qAt -F $'\t' "$admin" -c "SELECT round(calls::numeric / $n, 2), round((total_exec_time / $n)::numeric, 3),
      left(regexp_replace(query, '\\s+', ' ', 'g'), 90) FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db') AND calls >= $n / 50
      ORDER BY calls DESC LIMIT 14" | sed 's/^/    /'
  fi

  for pid in "${pids[@]}"; do kill "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  psql -q "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
done
echo
echo "$n messages, $clients submission connections; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$summary"
