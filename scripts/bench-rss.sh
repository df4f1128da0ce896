#!/usr/bin/env bash
# bench-rss.sh - peak RSS growth a span of `gymtrace serve --headless` holding
# 1M spans, read once its live tally has checked every span (the status
# line's tallied= covers all sent), so that the figure holds the tally's
# check of the whole store. bench-ingest.sh's memory runs read the peak once
# the receiver's count settles, a few seconds after the send: whether the
# tally's check of the full store falls inside that window depends on when
# its last check ran (it waits 30 times its cost between checks).
#
# Usage: scripts/bench-rss.sh [--rounds N] [--spans N] [--port P] [--wait S] REQ BIN...
#   REQ   a request file, e.g. ../shared/bench/req-realgym-agent-512.bin
#   BIN   gymtrace binaries, alternated in each round
# Prints one RSS line a run, then per binary the median [min..max] of
# bytes_per_span. Needs the yardstick's limit (/tmp/bench-bin/limit, or
# LIMIT=path): see BENCHMARKS.md "How to measure".
set -u
ROUNDS=3 SPANS=1000000 PORT=24317 WAIT=60
LIMIT=${LIMIT:-/tmp/bench-bin/limit}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2;;
    --spans) SPANS=$2; shift 2;;
    --port) PORT=$2; shift 2;;
    --wait) WAIT=$2; shift 2;;
    -h|--help) sed -n '2,16p' "$0"; exit 0;;
    *) break;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [--rounds N] [--spans N] [--port P] [--wait S] REQ BIN..." >&2; exit 2; }
REQ=$1; shift
[ -r "$REQ" ] || { echo "cannot read $REQ" >&2; exit 1; }
[ -x "$LIMIT" ] || { echo "missing $LIMIT: build it as BENCHMARKS.md says" >&2; exit 1; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

run() { # BIN: one run, one RSS line
  local bin=$1 pid base acked tallied=0 t=0 hwm
  "$bin" serve --headless --grpc-addr 127.0.0.1:$PORT --http-addr off --max-spans $((SPANS * 4)) >"$TMP/log" 2>&1 &
  pid=$!
  sleep 2 # start-up allocation settles before the baseline
  base=$(kb $pid VmRSS)
  "$LIMIT" blast -addr 127.0.0.1:$PORT -conc 4 -in "$REQ" -spans "$SPANS" -dur 600s >"$TMP/load" 2>&1
  acked=$(grep -o 'acked_spans=[0-9]*' "$TMP/load" | cut -d= -f2)
  while [ $t -lt $((WAIT * 4)) ]; do
    tallied=$(grep -o 'tallied=[0-9]*' "$TMP/log" | tail -n1 | cut -d= -f2)
    [ -n "$tallied" ] && [ "$tallied" -ge "${acked:-1}" ] && break
    sleep 0.25; t=$((t + 1))
  done
  hwm=$(kb $pid VmHWM)
  kill -INT $pid; wait $pid 2>/dev/null
  echo "RSS bin=$(basename "$bin") req=$(basename "$REQ") load=$(cut -d' ' -f1 /proc/loadavg) acked=${acked:-0} tallied=${tallied:-0} tally_after_s=$((t / 4)) base_mb=$((base / 1024)) peak_mb=$((hwm / 1024)) bytes_per_span=$(( (hwm - base) * 1024 / ${acked:-1} ))"
}

for r in $(seq "$ROUNDS"); do
  for b in "$@"; do run "$b"; done
done | tee "$TMP/all"
for b in "$@"; do
  grep "bin=$(basename "$b") " "$TMP/all" | grep -o 'bytes_per_span=[0-9]*' | cut -d= -f2 | sort -n |
    awk -v b="$(basename "$b")" '{ v[NR] = $1 } END { if (NR) printf "%s bytes_per_span median %d [%d..%d] runs=%d\n", b, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done
