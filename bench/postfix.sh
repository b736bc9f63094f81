#!/usr/bin/env bash
# End to end against Postfix + OpenDKIM on the same machine: both take N
# messages over SMTP from C client connections (bench/mailload), sign them
# with a 2048-bit DKIM key and relay them to the same counting sink; the
# two alternate, R rounds. Postline runs on its embedded SQLite with every
# commit synced (the default); Postfix fsyncs its queue files (its
# default). Prints messages/s from the first submission to the last message
# at the sink, and the CPU the server side used per message (Postline's
# process; Postfix's master, its children and OpenDKIM).
#
# Needs root and Debian's postfix and opendkim packages (apt-get install
# postfix opendkim); uses a private Postfix configuration and spool in a
# temporary directory, never /etc/postfix. Loopback only.
#
# Usage: bench/postfix.sh [N, default 2000] [rounds, default 3] [clients, default 8]
#        POSTLINE_BUILDS="default openssl" bench/postfix.sh 2000 3 8   (both builds, same run)
#        POSTLINE_BUILDS="openssl openssl@../variant" ...: KIND@DIR also builds KIND from the
#        checkout in DIR (a worktree with one change; a relative DIR is from the repository's
#        root), measured in the same rounds
#        POSTLINE_RELAY_CONNECTIONS=8: the relay to the sink takes 8 connections (default 4)
#        POSTLINE_PROFILE_DIR=DIR: each Postline writes DIR/postline-BUILD.pprof (serve --cpu-profile)
#        over the whole run; read it with go tool pprof -top DIR/postline-BUILD.pprof
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}; rounds=${2:-3}; clients=${3:-8}
[ "$(id -u)" = 0 ] || { echo "bench/postfix.sh: run as root (Postfix's master starts as root)" >&2; exit 2; }
command -v postfix >/dev/null && command -v opendkim >/dev/null ||
  { echo "bench/postfix.sh: needs postfix and opendkim (apt-get install postfix opendkim)" >&2; exit 2; }

work=$(mktemp -d); chmod 755 "$work"
pf=$work/postfix
cleanup() {
  MAIL_CONFIG=$pf/conf postfix stop >/dev/null 2>&1 || true
  [ -f "$pf/opendkim.pid" ] && kill "$(cat "$pf/opendkim.pid")" 2>/dev/null || true
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/mailload" ./bench/mailload
"$work/mailload" sink -addr 127.0.0.1:2626 -status 127.0.0.1:2627 &
sink_pid=$!

# Postline, once per build in POSTLINE_BUILDS: "default" (pure Go, CGO_ENABLED=0, as the
# Dockerfile builds it) and "openssl" (-tags openssl: RSA signing through the system's libcrypto,
# needs libssl-dev); each its own process, data directory and submission port (2587, 2588), a
# relay domain pointing at the sink.
# POSTLINE_RELAY_CONNECTIONS=N gives the relay (the sink) a connection_limit of N in a shaping
# file (unset: Postline's default, 4 connections a site; Postfix's default for the same relay is
# default_destination_concurrency_limit, 20).
shaping=
if [ -n "${POSTLINE_RELAY_CONNECTIONS:-}" ]; then
  shaping="POSTLINE_SHAPING_FILE=$work/shaping.toml"
  printf '["127.0.0.1"]\nconnection_limit = %d\n' "$POSTLINE_RELAY_CONNECTIONS" >"$work/shaping.toml"
fi
pl_env() { # build, submission port: the environment of that Postline
  echo "POSTLINE_DATA_DIR=$work/postline-$1-data POSTLINE_ADDR=127.0.0.1:$(($2 - 7)) POSTLINE_LOG_LEVEL=warn" \
    "POSTLINE_SUBMISSION_LISTEN=127.0.0.1:$2 POSTLINE_SUBMISSION_ALLOW_PLAIN_AUTH=true POSTLINE_RATE_DOMAIN_PER_MINUTE=100000000 $shaping"
}
builds=${POSTLINE_BUILDS:-default}
declare -A postline_pid submit_port
port=2587
names=()
for spec in $builds; do
  # KIND@DIR builds KIND from another checkout of Postline (a variant to compare in the same
  # run, e.g. a git worktree with one change); its label is postline-KIND-BASENAME.
  kind=${spec%%@*} dir=. b=${spec%%@*}
  case $spec in *@*) dir=${spec#*@}; b="$kind-$(basename "$dir")" ;; esac
  case $kind in
    default) (cd "$dir" && CGO_ENABLED=0 go build -o "$work/postline-$b" ./cmd/postline) ;;
    openssl) (cd "$dir" && CGO_ENABLED=1 go build -tags openssl -o "$work/postline-$b" ./cmd/postline) ;;
    *) echo "bench/postfix.sh: unknown build $spec (default, openssl, KIND@DIR)" >&2; exit 2 ;;
  esac
  names+=("$b")
  pl="env $(pl_env "$b" "$port") $work/postline-$b"
  $pl user create bench >/dev/null
  $pl key create bench | grep -o 'pl_[A-Za-z0-9_-]*' | head -1 >"$work/key-$b"
  $pl domain add bench shop.example --smtp-host 127.0.0.1 --smtp-port 2626 --smtp-tls none >/dev/null
  $pl domain verify shop.example --force >/dev/null
  profile=(); [ -n "${POSTLINE_PROFILE_DIR:-}" ] && profile=(--cpu-profile "$POSTLINE_PROFILE_DIR/postline-$b.pprof")
  $pl serve "${profile[@]}" >"$work/postline-$b.out" 2>"$work/postline-$b.log" & # env execs postline: $! is its pid
  postline_pid[$b]=$!
  submit_port[$b]=$port
  port=$((port + 1))
done

# Postfix and OpenDKIM as Debian ships them (Debian 12: Postfix 3.7, OpenDKIM 2.11), in a
# private instance (config, spool and log under $pf, never /etc/postfix):
# - master.cf is Debian's own /etc/postfix/master.cf, chroot column and all (smtpd, cleanup,
#   smtp ... run chrooted in the queue directory), with one change: smtpd listens on
#   127.0.0.1:2525 instead of port 25;
# - OpenDKIM's milter socket is a unix socket inside Postfix's chroot, as Debian's
#   opendkim README.Debian sets it up (local:$queue_directory/opendkim/opendkim.sock, postfix in
#   the opendkim group, smtpd_milters = non_smtpd_milters = unix:opendkim/opendkim.sock);
# - concurrency and process limits are Postfix's defaults (default_destination_concurrency_limit
#   20, default_process_limit 100).
# What differs from a stock installation, and why:
# - relayhost = [127.0.0.1]:2626 and no DNS: every message goes to the counting sink, loopback only;
# - mydestination, alias and local maps empty, mynetworks 127.0.0.0/8: it relays for the load
#   client, delivers nothing locally;
# - TLS off on both sides: Postline's relay to the sink and its submission run without TLS too;
# - OpenDKIM: Mode s (sign only, no verification: the messages are ours), one domain, selector
#   and key, Canonicalization relaxed/relaxed (Postline's; Debian's default is relaxed/simple),
#   Syslog off (a busy syslog would be charged to neither side);
# - milter_default_action = tempfail: a message is never relayed unsigned.
mkdir -p "$pf/conf" "$pf/spool" "$pf/data"
openssl genrsa -out "$pf/dkim.pem" 2048 2>/dev/null
chown opendkim "$pf/dkim.pem"; chmod 600 "$pf/dkim.pem"
mkdir -p "$pf/spool/opendkim"; chown opendkim:postfix "$pf/spool/opendkim"; chmod 750 "$pf/spool/opendkim"
id -nG postfix | grep -qw opendkim || adduser --quiet postfix opendkim
cat >"$pf/opendkim.conf" <<EOF
Syslog no
UMask 007
Mode s
Domain shop.example
Selector bench
KeyFile $pf/dkim.pem
Canonicalization relaxed/relaxed
SignatureAlgorithm rsa-sha256
OversignHeaders From
Socket local:$pf/spool/opendkim/opendkim.sock
PidFile $pf/opendkim.pid
UserID opendkim
RequireSafeKeys no
EOF
cat >"$pf/conf/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $pf/spool
data_directory = $pf/data
maillog_file = $pf/maillog
maillog_file_prefixes = $pf
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix.localhost
mydestination =
alias_maps =
alias_database =
local_recipient_maps =
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:2626
disable_dns_lookups = yes
smtp_dns_support_level = disabled
smtp_tls_security_level = none
smtpd_tls_security_level = none
smtpd_milters = unix:opendkim/opendkim.sock
non_smtpd_milters = unix:opendkim/opendkim.sock
milter_default_action = tempfail
EOF
sed 's/^smtp      inet  n       -       y       -       -       smtpd$/127.0.0.1:2525 inet n - y - - smtpd/' \
  /etc/postfix/master.cf >"$pf/conf/master.cf"
grep -q '^127.0.0.1:2525 inet n - y - - smtpd$' "$pf/conf/master.cf" ||
  { echo "bench/postfix.sh: Debian's master.cf has no stock smtpd line to move to 127.0.0.1:2525" >&2; exit 2; }
for d in active bounce corrupt defer deferred flush hold incoming private saved trace; do
  mkdir -p "$pf/spool/$d"; chown postfix "$pf/spool/$d"; chmod 700 "$pf/spool/$d"
done
mkdir -p "$pf/spool/maildrop" "$pf/spool/public" "$pf/spool/pid"
chown postfix:postdrop "$pf/spool/maildrop" "$pf/spool/public"; chmod 730 "$pf/spool/maildrop"; chmod 710 "$pf/spool/public"
chown postfix "$pf/data"
# The chroot's files (etc/services, etc/hosts, libraries), as Debian's init does for an instance.
MAIL_CONFIG=$pf/conf /usr/lib/postfix/configure-instance.sh - >/dev/null
opendkim -x "$pf/opendkim.conf"
MAIL_CONFIG=$pf/conf postfix start >/dev/null

for p in 2525 "${submit_port[@]}"; do
  for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done

# CPU seconds (user + system, children included) of the given processes.
cpu() {
  local t=0 f
  for p in "$@"; do
    read -r -a f <"/proc/$p/stat" 2>/dev/null || continue
    t=$((t + f[13] + f[14] + f[15] + f[16]))
  done
  echo "$t"
}
postfix_pids() {
  local master; master=$(cat "$pf/spool/pid/master.pid" | tr -d ' ')
  echo "$master" $(pgrep -P "$master") $(pgrep -x opendkim)
}
hz=$(getconf CLK_TCK)
# The whole machine's busy CPU time and its wall CPU time (/proc/stat, ticks over all cores): the
# server, the load, and the kernel's own threads (the filesystem journal that fsyncs run through,
# loopback networking), which no process is charged with. Time stolen by the hypervisor counts as
# neither.
machine() {
  local _ u n s i w q sq st
  read -r _ u n s i w q sq st _ </proc/stat
  echo "$((u + n + s + q + sq)) $((u + n + s + q + sq + i + w))"
}
measure() { # label, mailload flags...
  local label=$1; shift
  local pids before after line m_before m_after
  case $label in postline-*) pids=${postline_pid[${label#postline-}]} ;; *) pids=$(postfix_pids) ;; esac
  before=$(cpu $pids)
  # The load's CPU: the sink's, and the client's (a child this shell waits for, so it lands in
  # this shell's children's time).
  local load_before; load_before=$(($(cpu $$) + $(cpu $sink_pid)))
  m_before=$(machine)
  line=$("$work/mailload" send -n "$n" -c "$clients" -from orders@shop.example -status 127.0.0.1:2627 -label "$label" "$@")
  m_after=$(machine)
  local load_after; load_after=$(($(cpu $$) + $(cpu $sink_pid)))
  case $label in postline-*) pids=${postline_pid[${label#postline-}]} ;; *) pids=$(postfix_pids) ;; esac
  after=$(cpu $pids)
  # busy: the server side's CPU over the wall time of the run and the cores; near 100% the
  # machine is the limit, far below it the server waits (fsyncs, round trips, hand-offs).
  local secs; secs=$(echo "$line" | awk -F'\t' '{for (i = 1; i <= NF; i++) if ($i ~ /^delivered /) {sub(/^delivered /, "", $i); sub(/s$/, "", $i); print $i}}')
  # machine: every process's and the kernel's CPU per message, and that over all the CPU time
  # the run had (its share of the cores busy); near 100% the run is CPU-bound whoever waits.
  local mb mt; read -r mb mt <<<"$m_before"; local ma mta; read -r ma mta <<<"$m_after"
  printf '%s\tserver CPU %.2f ms/msg\tbusy %.0f%% of %d cores\tload CPU %.2f ms/msg\tmachine CPU %.2f ms/msg, busy %.0f%%\n' "$line" "$(echo "($after - $before) * 1000 / $hz / $n" | bc -l)" \
    "$(echo "($after - $before) / $hz / $secs / $(nproc) * 100" | bc -l)" "$(nproc)" "$(echo "($load_after - $load_before) * 1000 / $hz / $n" | bc -l)" \
    "$(echo "($ma - $mb) * 1000 / $hz / $n" | bc -l)" "$(echo "($ma - $mb) * 100 / ($mta - $mt)" | bc -l)"
}
# One small warm-up each (process start-up, first key load), not counted.
postline_round() {
  for b in "${names[@]}"; do
    measure "postline-$b" -addr "127.0.0.1:${submit_port[$b]}" -auth "bench:$(cat "$work/key-$b")"
  done
}
n_saved=$n; n=50
postline_round >/dev/null
measure postfix -addr 127.0.0.1:2525 >/dev/null
n=$n_saved
for _ in $(seq "$rounds"); do
  postline_round
  measure postfix -addr 127.0.0.1:2525
done
