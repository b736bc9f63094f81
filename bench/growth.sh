#!/usr/bin/env bash
# How Postline's cost grows with volume (issue 33, item 4), end to end, out of process.
#
# For each size N (default 2,000 20,000 200,000) a fresh `postline serve` (SQLite in a new data
# directory; PostgreSQL in a new database when POSTLINE_TEST_DATABASE_URL is set) takes N
# messages over SMTP submission on 8 connections (bench/mailload) and relays them, DKIM-signed,
# to a counting sink on loopback. Printed per size: msgs/s from the first submission to the
# last arrival, the serve process's CPU per message and its peak RSS (VmHWM).
#
# Then an outage: a fresh serve whose relay is down takes BACKLOG messages (default 200,000);
# printed: the RSS while it holds them (every first attempt failed, all deferred), then the
# time from the relay coming back to the last arrival. The retry schedule is 30s, so with
# retries spread (jitter) the drain takes about 30 s plus BACKLOG at the delivery rate; a wave
# would show as a stall and a burst.
#
# Usage: bench/growth.sh [N ...]        BACKLOG=200000 bench/growth.sh 2000 20000 200000
#        PRIVATE_PG=1 bench/growth.sh ...  (PostgreSQL, a cluster of its own; as root or postgres)
# Loopback only. Needs bc.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-2000 20000 200000}
backlog=${BACKLOG:-200000}
clients=8

work=$(mktemp -d)
dbs=()
. bench/privatepg.sh
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${PRIVATE_PG:-}" ]; then private_pg_stop "$work"; fi
  for db in "${dbs[@]}"; do
    psql -q "$POSTLINE_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
# PRIVATE_PG=1: a PostgreSQL cluster of its own with initdb's defaults (autovacuum on, as a
# production server has it; a test server may turn it off, and then the outage's updated rows
# are never cleaned and the drain crawls), port 55434, loopback only.
if [ -n "${PRIVATE_PG:-}" ]; then
  private_pg_start "$work" 55434
  export POSTLINE_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:55434/postgres?sslmode=disable"
fi
go build -o "$work/postline" ./cmd/postline
go build -o "$work/mailload" ./bench/mailload
hz=$(getconf CLK_TCK)
store=SQLite; [ -n "${POSTLINE_TEST_DATABASE_URL:-}" ] && store=PostgreSQL
[ "$store" = PostgreSQL ] && store="PostgreSQL $(psql -Atc 'SHOW server_version' "$POSTLINE_TEST_DATABASE_URL" | cut -d' ' -f1), autovacuum $(psql -Atc 'SHOW autovacuum' "$POSTLINE_TEST_DATABASE_URL")"
echo "store $store; $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"

# start_serve NAME RELAY_PORT: a fresh data directory (and database), a relay domain, submission
# on 2587; sets serve_pid and key.
start_serve() {
  local dir=$work/$1 url=
  mkdir -p "$dir"
  if [ "$store" = PostgreSQL ]; then
    local db="growth_$$_$1"
    psql -q "$POSTLINE_TEST_DATABASE_URL" -c "CREATE DATABASE $db"
    dbs+=("$db")
    url=$(echo "$POSTLINE_TEST_DATABASE_URL" | sed -E "s#/[^/?]+(\?|$)#/$db\1#")
  fi
  export POSTLINE_DATA_DIR=$dir POSTLINE_ADDR=127.0.0.1:2580 POSTLINE_LOG_LEVEL=warn POSTLINE_DATABASE_URL=$url
  export POSTLINE_SUBMISSION_LISTEN=127.0.0.1:2587 POSTLINE_SUBMISSION_ALLOW_PLAIN_AUTH=true
  export POSTLINE_RATE_DOMAIN_PER_MINUTE=100000000 POSTLINE_RETRY_SCHEDULE=30s,30s,30s,30s
  [ -z "$url" ] && unset POSTLINE_DATABASE_URL
  "$work/postline" user create bench >/dev/null
  key=$("$work/postline" key create bench | grep -o 'pl_[A-Za-z0-9_-]*' | head -1)
  "$work/postline" domain add bench shop.example --smtp-host 127.0.0.1 --smtp-port "$2" --smtp-tls none >/dev/null
  "$work/postline" domain verify shop.example --force >/dev/null
  "$work/postline" serve >"$dir/serve.out" 2>"$dir/serve.log" &
  serve_pid=$!
  for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/2587) 2>/dev/null && return; sleep 0.05; done
  echo "serve did not start:"; cat "$dir/serve.log"; exit 1
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; }
cpu() { local f; read -r -a f <"/proc/$1/stat"; echo $((f[13] + f[14])); }
mem() { awk -v k="$2:" '$1 == k {printf "%.0f", $2 / 1024}' "/proc/$1/status"; } # MiB

"$work/mailload" sink -addr 127.0.0.1:2626 -status 127.0.0.1:2627 &
printf '| messages | msgs/s | CPU per message | peak RSS |\n|---|---|---|---|\n'
for n in $sizes; do
  start_serve "n$n" 2626
  before=$(cpu "$serve_pid")
  line=$("$work/mailload" send -n "$n" -c "$clients" -from orders@shop.example -status 127.0.0.1:2627 -auth "bench:$key" -timeout 60m)
  after=$(cpu "$serve_pid")
  rate=$(echo "$line" | awk -F'\t' '{print $5}')
  printf '| %d | %s | %.2f ms | %s MiB |\n' "$n" "$rate" "$(echo "($after - $before) * 1000 / $hz / $n" | bc -l)" "$(mem "$serve_pid" VmHWM)"
  stop_serve
done

echo
echo "outage: $backlog messages queued while the relay is down (retry schedule 30s)"
start_serve backlog 2636
sub=$("$work/mailload" send -nowait -n "$backlog" -c "$clients" -from orders@shop.example -auth "bench:$key")
echo "$sub"
sleep 5
echo "held: RSS $(mem "$serve_pid" VmRSS) MiB, peak $(mem "$serve_pid" VmHWM) MiB"
"$work/mailload" sink -addr 127.0.0.1:2636 -status 127.0.0.1:2637 &
back=$(date +%s.%N)
# Arrivals are sampled every second: the series shows whether the retries come spread (a steady
# rate) or as a wave (a burst, then nothing until the next retry time).
series=(); limit=$((backlog / 50 + 600)) # seconds: far past any schedule, so a lost message ends the run
while :; do
  got=$(curl -fsS http://127.0.0.1:2637/ 2>/dev/null | cut -d' ' -f1 || echo 0)
  series+=("${got:-0}")
  [ "${got:-0}" -ge "$backlog" ] && break
  [ "${#series[@]}" -ge "$limit" ] && { echo "only ${got:-0} of $backlog arrived in $limit s"; break; }
  sleep 1
done
drain=$(echo "$(date +%s.%N) - $back" | bc -l)
printf 'drained %d messages %.1f s after the relay came back; peak RSS %s MiB\n' "${got:-0}" "$drain" "$(mem "$serve_pid" VmHWM)"
printf 'arrivals per 10 s after the relay came back:'
prev=0
for ((i = 9; i < ${#series[@]} + 9; i += 10)); do
  j=$((i < ${#series[@]} ? i : ${#series[@]} - 1))
  printf ' %d' $((series[j] - prev)); prev=${series[j]}
done
echo
stop_serve
