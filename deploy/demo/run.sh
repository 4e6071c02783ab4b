#!/usr/bin/env bash
# `make demo`: pagewatch end to end on this machine, all state in ./.demo.
#
# Builds the daemons and a nats-server, starts NATS JetStream and ClickHouse
# on uncommon loopback ports, starts ingest tail, ingest load, sweeper,
# worker and the web console, writes a synthetic access log in which
# /pricing gets 150 views, prints the email the worker writes once the
# sweeper sees the crossing, and the console's URL, where the crossing shows.
# Then everything keeps running until Ctrl-C. Whatever happens, every process
# this script started is stopped before it exits.
#
#   DEMO_EXIT_AFTER_MAIL=1 make demo    stop and exit 0 right after the email
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/deploy/demo
DEMO=$ROOT/.demo
BIN=$DEMO/bin
CONFIG=$DEMO/pagewatch.yaml
# Ports, all on 127.0.0.1. ClickHouse's are set in clickhouse-config.xml and
# the daemons' admin ports in pagewatch.yaml: keep them in step.
NATS_PORT=14222 NATS_HTTP=18222 CH_TCP=19000 CH_HTTP=18123
ADMIN_PORTS=(19101 19102 19103 19104 19106) # ingest tail, ingest load, sweeper, worker, console
CONSOLE_PORT=19105                    # the console's pages (auth: none, loopback only)
MAIL_TIMEOUT=60                       # seconds from daemon start to the first email

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
now_us() { local t=${EPOCHREALTIME//[!0-9]/}; echo "$((10#$t))"; }
secs_since() { local d=$((${2:-$(now_us)} - $1)); printf '%d.%01d' $((d / 1000000)) $((d / 100000 % 10)); } # START [END], in µs
show_tail() { local f; for f; do [[ ! -s $f ]] || { echo "--- last lines of ${f#"$ROOT/"} ---"; tail -n 20 "$f"; } >&2; done; }

# http_get URL: print the body of a 2xx answer, fail otherwise. curl, else
# wget, else bash's /dev/tcp: a fresh Debian may have neither tool.
http_get() {
  if have curl; then curl -fsS --max-time 5 "$1"; return; fi
  if have wget; then wget -qO- --timeout=5 "$1"; return; fi
  ( hp=${1#http://}; path=/${hp#*/}; hp=${hp%%/*}
    exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}"
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hp" >&3
    resp=$(timeout 5 cat <&3)
    [[ $resp == HTTP/1.?' 2'* ]] && printf '%s\n' "${resp#*$'\r\n\r\n'}" )
}

# ---- processes: each runs in its own session, so a Ctrl-C reaches only this
# script, which then stops the daemons first and the servers after them.
declare -A NAME=()    # pid -> name
DAEMONS=() SERVERS=() # pids, in the order they are stopped
STAGE=starting

start() { # start daemon|server NAME COMMAND...: in the background, output to .demo/logs/NAME.log
  local kind=$1 name=$2; shift 2
  (cd "$DEMO" && exec setsid "$@" >"$DEMO/logs/$name.log" 2>&1 </dev/null) &
  STARTED=$! NAME[$!]=$name
  if [[ $kind == daemon ]]; then DAEMONS+=("$!"); else SERVERS+=("$!"); fi
  echo "$!" >"$DEMO/pids/$name.pid"
}
alive() { # alive PID: running and not a zombie
  local s; { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }; [[ ${s:0:1} != Z ]]
}
stop() { # stop PID...: SIGTERM (to its process group), 15 s grace, then SIGKILL
  local pid i left
  for pid; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 150; i++)); do
    left=0; for pid; do alive "$pid" && left=1; done
    ((left)) || break; sleep 0.1
  done
  for pid; do
    if alive "$pid"; then
      echo "demo: ${NAME[$pid]:-pid $pid} did not stop within 15s: SIGKILL" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM HUP
  if ((${#DAEMONS[@]})); then echo "stopping ingest, sweeper, worker and console..."; stop "${DAEMONS[@]}"; fi
  if ((${#SERVERS[@]})); then echo "stopping NATS and ClickHouse..."; stop "${SERVERS[@]}"; fi
  rm -rf "$DEMO/pids"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo; [[ $STAGE == running ]] && exit 0; exit 130' INT TERM HUP

# wait_for SECONDS PID WHAT COMMAND...: retry COMMAND until it succeeds; fail
# if PID exits or SECONDS pass first.
wait_for() {
  local secs=$1 pid=$2 what=$3; shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$pid"; then echo "demo: $what exited during start-up" >&2; return 1; fi
    if ((SECONDS >= deadline)); then echo "demo: $what not ready after ${secs}s" >&2; return 1; fi
    sleep 0.2
  done
}
check_daemons() { # fail with its log if a daemon has exited
  local pid
  for pid in "${DAEMONS[@]}"; do
    alive "$pid" || { show_tail "$DEMO/logs/${NAME[$pid]}.log"; die "${NAME[$pid]} exited (log above)"; }
  done
}
ch_ping() { [[ $(http_get "http://127.0.0.1:$CH_HTTP/ping") == Ok. ]]; }
ch_query() { http_get "http://127.0.0.1:$CH_HTTP/?query=$1"; }

# ---- 1. preflight: leftovers of an earlier run that was killed hard (only
# pids it recorded whose command line still points into .demo), free ports.
[[ $DEMO != *[\'\"\\\&\<\>]* ]] || die "the repository path $ROOT has a character this script does not escape"
LEFT=()
for f in "$DEMO"/pids/*.pid; do
  [[ -e $f ]] && pid=$(<"$f") || continue
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DEMO/"; then
    LEFT+=("$pid") NAME[$pid]=$(basename "$f" .pid)
  fi
done
if ((${#LEFT[@]})); then
  echo "stopping what an earlier demo left running: ${NAME[*]}"
  stop "${LEFT[@]}"
fi
for port in $NATS_PORT $NATS_HTTP $CH_TCP $CH_HTTP $CONSOLE_PORT "${ADMIN_PORTS[@]}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "port $port on 127.0.0.1 is in use; the demo needs ports $NATS_PORT $NATS_HTTP $CH_TCP $CH_HTTP $CONSOLE_PORT ${ADMIN_PORTS[*]} (see: ss -ltnp 'sport = :$port')"
  fi
done
have go || die "Go is needed to build the demo: https://go.dev/dl/"

find_clickhouse() { # Debian's package puts it in /usr/sbin, which a user's PATH may lack
  local c
  for c in clickhouse-server /usr/sbin/clickhouse-server; do have "$c" && { CH_CMD=("$(command -v "$c")"); return 0; }; done
  have clickhouse && CH_CMD=("$(command -v clickhouse)" server) # the newer single binary
}
if ! find_clickhouse; then
  [[ $EUID -eq 0 ]] && have apt-get ||
    die "clickhouse-server is not installed. Install it (Debian: sudo apt-get install clickhouse-server clickhouse-client), or run 'make demo' as root to have it installed."
  # The install make test does: Debian's packages, their service kept from
  # starting (the demo runs a server of its own).
  say "clickhouse-server not found: installing it (.ci/install-test-deps clickhouse)"
  bash "$ROOT/.ci/install-test-deps" clickhouse
  find_clickhouse || die "clickhouse-server is still missing after installing it"
fi

# ---- 2. build, reset the demo state (keeping .demo/bin for build speed)
say "building ingest, sweeper, worker, console and nats-server (go.mod's version) into .demo/bin"
(cd "$ROOT" && go build -o "$BIN/" ./cmd/... && go build -o "$BIN/nats-server" github.com/nats-io/nats-server/v2)
rm -rf "$DEMO"/{nats,clickhouse,outbox,logs,pids,access.log,pagewatch.yaml}
mkdir -p "$DEMO"/{nats,clickhouse/data,clickhouse/log,outbox,logs,pids}

# render TEMPLATE OUT PLACEHOLDER VALUE
render() { local t; t=$(<"$1"); printf '%s\n' "${t//"$3"/"$4"}" >"$2"; }

# ---- 3. NATS with JetStream
say "starting NATS JetStream on 127.0.0.1:$NATS_PORT (monitoring on :$NATS_HTTP)"
start server nats "$BIN/nats-server" -js -sd "$DEMO/nats" -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_HTTP"
wait_for 20 "$STARTED" "nats-server" http_get "http://127.0.0.1:$NATS_HTTP/healthz?js-enabled-only=true" ||
  { show_tail "$DEMO/logs/nats.log"; exit 1; }

# ---- 4. ClickHouse with its own config, data and logs in .demo/clickhouse
say "starting ClickHouse (${CH_CMD[*]}) on 127.0.0.1:$CH_TCP (native) and :$CH_HTTP (HTTP)"
render "$HERE/clickhouse-config.xml" "$DEMO/clickhouse/config.xml" @DIR@ "$DEMO/clickhouse"
render "$HERE/clickhouse-users.xml" "$DEMO/clickhouse/users.xml" @DIR@ "$DEMO/clickhouse"
start server clickhouse env CLICKHOUSE_WATCHDOG_ENABLE=0 "${CH_CMD[@]}" --config-file="$DEMO/clickhouse/config.xml"
wait_for 60 "$STARTED" "clickhouse-server" ch_ping ||
  { show_tail "$DEMO/clickhouse/log/server.err.log" "$DEMO/logs/clickhouse.log"; exit 1; }

# ---- 5. the pagewatch config, checked by every daemon before anything runs
render "$HERE/pagewatch.yaml" "$CONFIG" @DEMO@ "$DEMO"
for cmd in "ingest tail" "ingest load" "sweeper run" "worker run" "console run"; do
  read -r prog sub <<<"$cmd"
  out=$("$BIN/$prog" --config "$CONFIG" --check-config "$sub" 2>&1) || { echo "$out" >&2; die "$cmd rejected $CONFIG"; }
done
echo "config: ${CONFIG#"$ROOT/"} (valid for ingest tail, ingest load, sweeper, worker and console)"

# ---- 6. the daemons, then the access log they watch
say "starting ingest tail, ingest load, sweeper, worker and console (logs in .demo/logs)"
: >"$DEMO/access.log"
T0=$(now_us)
start daemon ingest-tail "$BIN/ingest" --config "$CONFIG" tail
start daemon ingest-load "$BIN/ingest" --config "$CONFIG" load
start daemon sweeper "$BIN/sweeper" --config "$CONFIG" run
start daemon worker "$BIN/worker" --config "$CONFIG" run
start daemon console "$BIN/console" --config "$CONFIG" run
for i in 0 1 2 3 4; do
  pid=${DAEMONS[i]}
  wait_for 30 "$pid" "${NAME[$pid]}" http_get "http://127.0.0.1:${ADMIN_PORTS[i]}/readyz" ||
    { show_tail "$DEMO/logs/${NAME[$pid]}.log"; exit 1; }
done
# The console's pages answer once it has connected to NATS and ClickHouse.
wait_for 30 "${DAEMONS[4]}" console http_get "http://127.0.0.1:$CONSOLE_PORT/history" ||
  { show_tail "$DEMO/logs/console.log"; exit 1; }
echo "all five ready after $(secs_since "$T0") s"

say "writing synthetic traffic to .demo/access.log (deploy/demo/traffic.sh)"
bash "$HERE/traffic.sh" "$DEMO/access.log"
LOG_SECS=$(secs_since "$T0")

# ---- 7. wait for the email about /pricing. The home page's all-time rule
# usually fires in the same sweep; its email is listed, not printed, so the
# demo shows the same email every time.
say "waiting up to ${MAIL_TIMEOUT}s (from daemon start) for the worker's email in .demo/outbox"
pricing_eml() { local f; for f in "$DEMO"/outbox/pricing-demo.*.eml; do [[ -e $f ]] && { EML=$f; return 0; }; done; return 1; }
until pricing_eml; do
  check_daemons
  if (($(now_us) - T0 > MAIL_TIMEOUT * 1000000)); then
    show_tail "$DEMO"/logs/{ingest-tail,ingest-load,sweeper,worker,console}.log
    die "no email in .demo/outbox ${MAIL_TIMEOUT}s after the daemons started (daemon logs above)"
  fi
  sleep 0.2
done
ELAPSED=$(secs_since "$T0" "$(date -r "$EML" +%s%6N)") # when the worker wrote it
sleep 0.5 # let the loader and the worker catch up before counting
echo
echo "=== email written by the worker: ${EML#"$ROOT/"} ==="
# Headers and the plain-text part; the HTML part and the chart (PNG) are
# in the file for a mail client.
awk '/^Content-Type: text\/html/ { exit } { print }' "$EML" | tr -d '\r'
echo "=== (HTML part and chart.png: open the .eml in a mail client) ==="
declare -A SEEN=(["$EML"]=1)
new_emails() { # list the emails not shown yet
  local f
  for f in "$DEMO"/outbox/*.eml; do
    [[ -e $f && -z ${SEEN[$f]:-} ]] || continue
    SEEN[$f]=1; echo "another email: ${f#"$ROOT/"}  $(grep -m1 '^Subject:' "$f" || true)"
  done
}
new_emails
echo "the email was written ${ELAPSED} s after the daemons started (writing the log ended at ${LOG_SECS} s);" \
  "ClickHouse has $(ch_query 'SELECT+count()+FROM+pagewatch.hits') hits and $(ch_query 'SELECT+count()+FROM+pagewatch.crossings') crossing(s)"

# The console's history lists the crossing (its row carries the rule's
# name), read as a browser would.
CONSOLE=http://127.0.0.1:$CONSOLE_PORT
console_has_crossing() { http_get "$CONSOLE/history?rule=pricing-demo" | grep -qF 'data-rule="pricing-demo"'; }
wait_for 10 "${DAEMONS[4]}" console console_has_crossing ||
  { show_tail "$DEMO/logs/console.log"; die "the console's history does not show the pricing-demo crossing"; }
say "the console: $CONSOLE/ (the crossing: $CONSOLE/history, the page: $CONSOLE/page?site=demo.example&path=/pricing)"

if [[ ${DEMO_EXIT_AFTER_MAIL:-} == 1 ]]; then
  say "DEMO_EXIT_AFTER_MAIL=1: stopping everything"
  exit 0
fi

# ---- 8. keep running until Ctrl-C, reporting new emails
cat <<EOF

Everything keeps running. Poke at it:
  the console:       $CONSOLE/   (no login: auth none, on loopback only)
  admin (/metrics /healthz /readyz): http://127.0.0.1:19101/metrics (ingest tail), :19102 (ingest load),
                                     :19103 (sweeper), :19104 (worker), :19106 (console)
  NATS monitoring:   http://127.0.0.1:$NATS_HTTP/jsz?streams=true
  ClickHouse:        curl 'http://127.0.0.1:$CH_HTTP/?query=SELECT+path,count()+FROM+pagewatch.hits+GROUP+BY+path'
                     clickhouse-client --host 127.0.0.1 --port $CH_TCP
  more traffic:      bash deploy/demo/traffic.sh .demo/access.log
  emails:            .demo/outbox/     logs: .demo/logs/     config: .demo/pagewatch.yaml
Press Ctrl-C to stop everything.
EOF
STAGE=running
while :; do
  new_emails
  check_daemons
  sleep 1
done
