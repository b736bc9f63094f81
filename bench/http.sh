#!/usr/bin/env bash
# Request-path throughput against the ceiling of a canned net/http handler on
# the same machine, alternating, out of process (bench/httpload), loopback
# only. Usage: bench/http.sh [seconds per run, default 10] [rounds, default 3]
# ONLY=label (healthz, validate-cached, domain, log-page-100) runs one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}; rounds=${2:-3}
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/postline" ./cmd/postline
go build -o "$work/httpload" ./bench/httpload
export POSTLINE_DATA_DIR="$work/data" POSTLINE_ADDR=127.0.0.1:9925 POSTLINE_DNS_SERVER=127.0.0.1:9953
export POSTLINE_RATE_VALIDATION_PER_HOUR=100000000 POSTLINE_RATE_DOMAIN_PER_MINUTE=100000000 POSTLINE_LOG_LEVEL=warn
"$work/httpload" dns -addr 127.0.0.1:9953 -mx acme-mail.com >/dev/null &
"$work/postline" user create bench >/dev/null
key=$("$work/postline" key create bench | grep -o 'pl_[A-Za-z0-9_-]*' | head -1)
"$work/postline" domain add bench shop.example --direct >/dev/null
"$work/postline" domain verify shop.example --force >/dev/null
"$work/postline" dev seed-log shop.example --count "${SEED:-100000}" >/dev/null
"$work/postline" serve 2>"$work/serve.log" &
for _ in $(seq 50); do curl -sf http://127.0.0.1:9925/healthz >/dev/null && break; sleep 0.2; done
auth="Authorization: Basic $(printf 'bench:%s' "$key" | base64 -w0)"
api=http://127.0.0.1:9925
curl -sf -X POST -H "$auth" -H 'Content-Type: application/json' -d '{"email":"jane@acme-mail.com"}' $api/api/email/validate >/dev/null

run() { # label method path body: Postline, then the canned handler with Postline's answer
  local label=$1 method=$2 path=$3 body=${4:-}
  [ -z "${ONLY:-}" ] || [ "$ONLY" = "$label" ] || return 0
  local answer; answer=$(curl -sf -X "$method" -H "$auth" -H 'Content-Type: application/json' ${body:+-d "$body"} "$api$path")
  "$work/httpload" canned -addr 127.0.0.1:9901 -body "$answer" & local canned=$!
  sleep 0.3
  for r in $(seq "$rounds"); do
    "$work/httpload" load -c 32 -d "${secs}s" -label "postline $label" -method "$method" -url "$api$path" \
      -header "$auth" -header 'Content-Type: application/json' ${body:+-body "$body"}
    "$work/httpload" load -c 32 -d "${secs}s" -label "canned   $label" -method "$method" -url "http://127.0.0.1:9901$path" \
      -header "$auth" -header 'Content-Type: application/json' ${body:+-body "$body"}
  done
  kill $canned; wait $canned 2>/dev/null || true
}
run "healthz" GET /healthz
run "validate-cached" POST /api/email/validate '{"email":"jane@acme-mail.com"}'
run "domain" GET /api/domains/shop.example
run "log-page-100" GET '/api/domains/shop.example/log?limit=100'
