#!/usr/bin/env bash
# traffic.sh FILE: append a burst of synthetic page views to FILE, an access
# log in combined format with the current time, 30 lines every 0.25 s so a
# tailer sees it flow. Used by run.sh; run it again for more traffic:
#   bash deploy/demo/traffic.sh .demo/access.log
# /pricing gets 150 views (the demo rule fires above 100 in 1h) and / gets 70
# (above 50 in all time); other pages get fewer. The addresses are from the
# documentation ranges (RFC 5737, RFC 3849).
set -euo pipefail
OUT=${1:?usage: traffic.sh ACCESS_LOG}

# The requests: "METHOD TARGET STATUS BYTES", repeated. Query strings are
# dropped at ingest, so /pricing?plan=team counts as /pricing.
REQS=()
add() { local i; for ((i = 0; i < $1; i++)); do REQS+=("$2"); done; }
add 120 "GET /pricing 200 18230"; add 20 "GET /pricing?plan=team 200 18230"
add 10 "GET /pricing?utm_source=newsletter 200 18230"; add 70 "GET / 200 10422"
add 40 "GET /blog/launch 200 25110"; add 30 "GET /docs/getting-started 200 31877"
add 20 "GET /signup 200 6120"; add 8 "POST /signup 302 0"
add 12 "GET /about 200 7311"; add 4 "GET /wp-login.php 404 153"
mapfile -t REQS < <(printf '%s\n' "${REQS[@]}" | shuf)
IPS=(192.0.2.14 192.0.2.77 198.51.100.23 198.51.100.160 203.0.113.9 203.0.113.42 203.0.113.201 2001:db8::5 2001:db8:1::a1)
REFS=(- - - https://www.google.com/ https://demo.example/ https://news.ycombinator.com/ https://demo.example/blog/launch)
UAS=("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
  "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
  "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")

echo "${#REQS[@]} requests over ~3 s: /pricing 150, / 70, others fewer"
for ((n = 0; n < ${#REQS[@]}; n += 30)); do
  ts=$(LC_ALL=C date -u '+%d/%b/%Y:%H:%M:%S +0000') chunk=""
  for r in "${REQS[@]:n:30}"; do
    read -r method target status bytes <<<"$r"
    chunk+="${IPS[RANDOM % ${#IPS[@]}]} - - [$ts] \"$method $target HTTP/1.1\" $status $bytes"
    chunk+=" \"${REFS[RANDOM % ${#REFS[@]}]}\" \"${UAS[RANDOM % ${#UAS[@]}]}\""$'\n'
  done
  printf '%s' "$chunk" >>"$OUT"
  printf '  %3d lines  %s\n' "$((n + 30 < ${#REQS[@]} ? n + 30 : ${#REQS[@]}))" "$(tail -n 1 "$OUT" | cut -c1-100)"
  sleep 0.25
done
