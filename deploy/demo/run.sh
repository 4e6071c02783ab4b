#!/usr/bin/env bash
# `make demo`: pagewatch end to end on this machine, all state in ./.demo.
# What it shows and how its clock works: docs/demo.md.
#
# Builds the daemons, a nats-server and the traffic generator
# (internal/demotraffic), starts NATS JetStream and ClickHouse on uncommon
# loopback ports, writes 5 weeks of access-log history for a small site
# (rotated as logrotate leaves it: access.log.1, access.log.2.gz, ...),
# backfills it through `ingest tail --from-start` (its progress display on
# the terminal) into ClickHouse, then goes live: the sweeper (running the
# shipped rule file, deploy/rules/spike-default.yaml), the worker and the
# console start on a demo clock 150 × faster than the wall's, and the
# generator appends live traffic at that clock's time. Within about a
# minute: a blog post surges from a Hacker News link (fire, escalation,
# back to normal), /docs/install goes quiet, a new post takes off, and
# /pricing passes the threshold rule. Each email is listed as it comes,
# the first surge email printed, and a line says when the story is
# complete. Then everything keeps running until Ctrl-C. Whatever
# happens, every process this script started is stopped before it exits.
#
#   DEMO_EXIT_AFTER_MAIL=1 make demo    stop and exit 0 right after the first surge email
#   DEMO_EXIT_AFTER=story make demo     ...after every part of the story has been emailed
#   DEMO_WEEKS=2 make demo              less history (the rule's normal then reads days, not weeks)
#   DEMO_SPEED=60 make demo             the demo clock's speed (1: the wall clock)
set -euo pipefail
T_CMD=${EPOCHREALTIME//[!0-9]/} # µs: the timings printed are from here

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
MAIL_TIMEOUT=60                       # seconds from the live phase's start to the first surge email
STORY_TIMEOUT=180                     # ...and to the last of the story (DEMO_EXIT_AFTER=story)
WEEKS=${DEMO_WEEKS:-5} SPEED=${DEMO_SPEED:-150}
[[ $WEEKS =~ ^[1-9][0-9]?$ ]] || { echo "demo: DEMO_WEEKS must be 1 to 99, got $WEEKS" >&2; exit 1; }
[[ $SPEED =~ ^[1-9][0-9]{0,3}$ ]] || { echo "demo: DEMO_SPEED must be 1 to 9999, got $SPEED" >&2; exit 1; }

say() { printf '\n==> %s  (%ss)\n' "$*" "$(secs_since "$T_CMD")"; }
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
  [[ -e $f ]] || continue
  pid=$(<"$f")
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
  { [[ $EUID -eq 0 ]] && have apt-get; } ||
    die "clickhouse-server is not installed. Install it (Debian: sudo apt-get install clickhouse-server clickhouse-client), or run 'make demo' as root to have it installed."
  # The install make test does: Debian's packages, their service kept from
  # starting (the demo runs a server of its own).
  say "clickhouse-server not found: installing it (.ci/install-test-deps clickhouse)"
  bash "$ROOT/.ci/install-test-deps" clickhouse
  find_clickhouse || die "clickhouse-server is still missing after installing it"
fi

# ---- 2. build, reset the demo state (keeping .demo/bin for build speed)
say "building ingest, sweeper, worker, console, demotraffic and nats-server (go.mod's version) into .demo/bin"
(cd "$ROOT" && go build -o "$BIN/" ./cmd/... ./internal/demotraffic/cmd/demotraffic &&
  go build -o "$BIN/nats-server" github.com/nats-io/nats-server/v2)
rm -rf "$DEMO"/{nats,clickhouse,outbox,logs,pids,rules,access.log*,pagewatch.yaml}
mkdir -p "$DEMO"/{nats,clickhouse/data,clickhouse/log,outbox,logs,pids,rules}

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

# ---- 5. the pagewatch config, checked by every daemon before anything runs.
# The shipped rule file, its recipients changed and nothing else.
render "$HERE/pagewatch.yaml" "$CONFIG" @DEMO@ "$DEMO"
render "$ROOT/deploy/rules/spike-default.yaml" "$DEMO/rules/spike-default.yaml" "recipients: [ops@example.com]" "recipients: [you@example.com]"
grep -qF "recipients: [you@example.com]" "$DEMO/rules/spike-default.yaml" ||
  die "deploy/rules/spike-default.yaml has no 'recipients: [ops@example.com]' for the demo to change"
for cmd in "ingest tail" "ingest load" "sweeper run" "worker run" "console run"; do
  read -r prog sub <<<"$cmd"
  out=$("$BIN/$prog" --config "$CONFIG" --check-config "$sub" 2>&1) || { echo "$out" >&2; die "$cmd rejected $CONFIG"; }
done
echo "config: ${CONFIG#"$ROOT/"} (valid for ingest tail, ingest load, sweeper, worker and console)"

# ---- 6. the history: written, then backfilled through the real pipeline
# while only the loader and the worker run (a sweep over half-loaded
# history would judge a normal that is not there yet).
END=$(date -u +%Y-%m-%dT%H:%M:%SZ)
say "writing $WEEKS weeks of access-log history up to $END into .demo/access.log* (internal/demotraffic)"
"$BIN/demotraffic" history -log "$DEMO/access.log" -end "$END" -weeks "$WEEKS"

ready() { # ready NAME ADMIN_PORT: wait for the daemon's /readyz
  local pid=$STARTED
  wait_for 30 "$pid" "$1" http_get "http://127.0.0.1:$2/readyz" || { show_tail "$DEMO/logs/$1.log"; exit 1; }
}
say "starting ingest load and worker (logs in .demo/logs)"
start daemon ingest-load "$BIN/ingest" --config "$CONFIG" load && ready ingest-load 19102
start daemon worker "$BIN/worker" --config "$CONFIG" run && ready worker 19104

say "backfilling: ingest tail --from-start --backfill-only"
T_BF=$(now_us)
# In the foreground: its progress display is this terminal's (Ctrl-C
# reaches it too; a rerun of the demo starts over).
"$BIN/ingest" --config "$CONFIG" tail --from-start --backfill-only
BF_READ=$(secs_since "$T_BF")
# Loaded once no consumer has anything pending nor unacknowledged, as
# NATS counts it now (the loader's own gauge is refreshed every 5 s, so a
# 0 there can predate the backfill). Only the loader and the worker have
# consumers yet, and no job has been queued, so every message counted
# here is the loader's.
load_lag() {
  http_get "http://127.0.0.1:$NATS_HTTP/jsz?consumers=true" |
    grep -oE '"num_(ack_)?pending": *[0-9]+' | awk -F: '{n += $2; k++} END {print k ? n : "unknown"}'
}
loaded() { [[ $(load_lag) == 0 ]] && sleep 0.3 && [[ $(load_lag) == 0 ]]; }
wait_for 120 "${DAEMONS[0]}" "ingest load" loaded || { show_tail "$DEMO/logs/ingest-load.log"; exit 1; }
BF_SECS=$(secs_since "$T_BF")
echo "backfill: read in ${BF_READ} s, loaded in ${BF_SECS} s; ClickHouse has $(ch_query 'SELECT+count()+FROM+pagewatch.hits') hits"

# ---- 7. live: the demo clock starts now. The sweeper and the console run
# on it, demotraffic stamps its lines with it, and ingest tail dates them
# against it (PAGEWATCH_DEMO_CLOCK): on the wall's, each would be ahead.
CLOCK=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)@${SPEED}x
say "going live on a demo clock ${SPEED} × the wall's ($CLOCK): an hour every $((3600 / SPEED)) s"
T_LIVE=$(now_us)
start daemon ingest-tail env PAGEWATCH_DEMO_CLOCK="$CLOCK" "$BIN/ingest" --config "$CONFIG" tail && ready ingest-tail 19101
start daemon traffic env PAGEWATCH_DEMO_CLOCK="$CLOCK" "$BIN/demotraffic" live -log "$DEMO/access.log" -end "$END"
start daemon sweeper env PAGEWATCH_DEMO_CLOCK="$CLOCK" "$BIN/sweeper" --config "$CONFIG" run
start daemon console env PAGEWATCH_DEMO_CLOCK="$CLOCK" "$BIN/console" --config "$CONFIG" run
ready console 19106
wait_for 30 "$STARTED" console http_get "http://127.0.0.1:$CONSOLE_PORT/history" ||
  { show_tail "$DEMO/logs/console.log"; exit 1; }

# ---- 8. wait for the first email about the surging post, and print it.
# Emails are named after their rule; the surge's names the post.
SURGE=/blog/sqlite-at-scale QUIET=/docs/install NEWPAGE=/blog/launch-week
say "waiting up to ${MAIL_TIMEOUT}s for the worker's first email about $SURGE in .demo/outbox"
by_time() { find "$DEMO/outbox" -name "$1" -printf '%T@ %p\n' | sort -n | cut -d' ' -f2-; } # by_time GLOB: oldest first
first_eml() { # first_eml GLOB TEXT: the oldest email matching both
  local f
  while IFS= read -r f; do grep -qF -- "$2" "$f" && { EML=$f; return 0; }; done < <(by_time "$1")
  return 1
}
until first_eml 'unusual.*.eml' "Page:       $SURGE"; do
  check_daemons
  if (($(now_us) - T_LIVE > MAIL_TIMEOUT * 1000000)); then
    show_tail "$DEMO"/logs/{ingest-tail,ingest-load,sweeper,worker,console,traffic}.log
    die "no email about $SURGE in .demo/outbox ${MAIL_TIMEOUT}s after going live (daemon logs above)"
  fi
  sleep 0.2
done
MAIL_AT=$(date -r "$EML" +%s%6N) # when the worker wrote it
echo
echo "=== email written by the worker: ${EML#"$ROOT/"} ==="
# Its headers and plain-text part, decoded as a mail client shows them;
# the HTML part and the chart (PNG) are in the file for a mail client.
"$BIN/demotraffic" show "$EML"
echo "=== (HTML part and chart.png: open the .eml in a mail client) ==="
echo "the email was written $(secs_since "$T_LIVE" "$MAIL_AT") s after going live," \
  "$(secs_since "$T_CMD" "$MAIL_AT") s after the command (backfill: ${BF_SECS} s)"
declare -A SEEN=(["$EML"]=1)
new_emails() { # list the emails not shown yet
  local f
  while IFS= read -r f; do
    [[ -z ${SEEN[$f]:-} ]] || continue
    SEEN[$f]=1; echo "  +$(secs_since "$T_LIVE" "$(date -r "$f" +%s%6N)") s  $("$BIN/demotraffic" subject "$f" || true)"
  done < <(by_time '*.eml')
}
echo "other emails so far (seconds after going live):"
new_emails

# The console's history lists the threshold rule's crossing (its row
# carries the rule's name), read as a browser would.
CONSOLE=http://127.0.0.1:$CONSOLE_PORT
console_has_crossing() { http_get "$CONSOLE/history?rule=pricing-demo" | grep -qF 'data-rule="pricing-demo"'; }
wait_for 20 "${DAEMONS[-1]}" console console_has_crossing ||
  { show_tail "$DEMO/logs/console.log"; die "the console's history does not show the pricing-demo crossing"; }
say "the console: $CONSOLE/ (the surge: $CONSOLE/page?site=demo.example&path=$SURGE, the crossings: $CONSOLE/history)"

if [[ ${DEMO_EXIT_AFTER_MAIL:-} == 1 ]]; then
  say "DEMO_EXIT_AFTER_MAIL=1: stopping everything"
  exit 0
fi

# Every part of the story, each in its own email: the surge's fire,
# escalation and resolve, the quiet page, the new page, the threshold.
story() {
  # GLOB|PAGE: each file named after its crossing's key, the page on
  # its Page: line. Keys end .N (fire), .N.xK (escalate), .N.resolved.
  local -a want=("unusual.*[0-9].eml|$SURGE" "unusual.*.x[0-9]*.eml|$SURGE" "unusual.*.resolved.eml|$SURGE"
    "unusual.*[0-9].eml|$QUIET" "unusual.*[0-9].eml|$NEWPAGE" "pricing-demo.*.eml|/pricing")
  local w glob path f ok
  for w in "${want[@]}"; do
    IFS='|' read -r glob path <<<"$w"; ok=
    for f in "$DEMO"/outbox/$glob; do
      [[ -e $f ]] && grep -qE "^Page: +$path"$'\r?$' "$f" && { ok=1; break; }
    done
    [[ -n $ok ]] || { MISSING="$glob for $path"; return 1; }
  done
}

if [[ ${DEMO_EXIT_AFTER:-} == story ]]; then
  say "DEMO_EXIT_AFTER=story: waiting up to ${STORY_TIMEOUT}s (from going live) for the rest of the story"
  until story; do
    check_daemons; new_emails
    if (($(now_us) - T_LIVE > STORY_TIMEOUT * 1000000)); then
      show_tail "$DEMO"/logs/{sweeper,worker}.log
      die "the story is not complete ${STORY_TIMEOUT}s after going live: no email for $MISSING"
    fi
    sleep 0.5
  done
  new_emails
  echo "the story is complete $(secs_since "$T_LIVE") s after going live, $(secs_since "$T_CMD") s after the command"
  say "DEMO_EXIT_AFTER=story: stopping everything"
  exit 0
fi

# ---- 9. keep running until Ctrl-C, reporting new emails
cat <<EOF

Everything keeps running. Poke at it:
  the console:       $CONSOLE/   (no login: auth none, on loopback only)
  admin (/metrics /healthz /readyz): http://127.0.0.1:19101/metrics (ingest tail), :19102 (ingest load),
                                     :19103 (sweeper), :19104 (worker), :19106 (console)
  NATS monitoring:   http://127.0.0.1:$NATS_HTTP/jsz?streams=true
  ClickHouse:        curl 'http://127.0.0.1:$CH_HTTP/?query=SELECT+path,count()+FROM+pagewatch.hits+GROUP+BY+path'
                     clickhouse-client --host 127.0.0.1 --port $CH_TCP
  the live traffic:  .demo/logs/traffic.log (an hour of the demo clock a line)
  emails:            .demo/outbox/     logs: .demo/logs/     config: .demo/pagewatch.yaml
Press Ctrl-C to stop everything.
EOF
STAGE=running
TOLD=
while :; do
  new_emails
  if [[ -z $TOLD ]] && story; then
    # story() may have seen an email that arrived after new_emails listed
    # them: list it before saying the story is complete.
    new_emails
    TOLD=1; echo "the story is complete $(secs_since "$T_LIVE") s after going live, $(secs_since "$T_CMD") s after the command"
  fi
  check_daemons
  sleep 1
done
