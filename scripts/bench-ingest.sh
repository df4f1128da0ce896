#!/usr/bin/env bash
# bench-ingest.sh - compare gymtrace's OTLP/gRPC ingest with the OpenTelemetry
# Collector's counting sink on this machine, in alternating runs
# (sink, gymtrace, sink, gymtrace, ...), so that load from other processes hits
# both alike. Each run is one `ingest.sh --runs 1`; at the end it prints the
# per-label medians (summarize.sh), the ratio gymtrace/sink of each adjacent
# pair, and the ratio of the medians.
#
# Usage:
#   scripts/bench-ingest.sh [options] [-- EXTRA_INGEST_ARGS...]
#
# Options (defaults in brackets):
#   --pairs N          sink/gymtrace pairs [3]
#   --duration D       sending time per run (duration mode) [20s]
#   --conc N           blast requests in flight [4]
#   --max-spans N      gymtrace --max-spans [2000000]
#   --only gymtrace|sink  run one side only (memory runs) [both]
#   --label-suffix S   appended to both labels, e.g. -1m [none]
#   --gymtrace BIN     gymtrace binary [/tmp/bench-bin/gymtrace; built if missing]
#   --sink BIN         collector sink [/tmp/bench-bin/collector-sink]
#   --bench DIR        the yardstick (ingest.sh, summarize.sh) [../shared/bench beside the repository]
#   --outdir DIR       where logs and summary.txt go [/tmp/bench-ingest-TIMESTAMP]
#   --watch-rss S      sample the receiver's VmRSS every S seconds into
#                      OUTDIR/rss-<side>-<pair>.txt and print min/max after
#                      the first minute (memory flat under --max-spans) [off]
# Everything after -- goes to ingest.sh, e.g. `-- --mode count --spans 1000000`.
#
# Examples:
#   scripts/bench-ingest.sh --pairs 3                                   # throughput ratio
#   scripts/bench-ingest.sh --only gymtrace --pairs 3 --label-suffix -1m \
#       --max-spans 2000000 -- --mode count --spans 1000000             # bytes per span
set -u

PAIRS=3 DURATION=20s CONC=4 MAX_SPANS=2000000 ONLY=both SUFFIX=""
GYMTRACE=/tmp/bench-bin/gymtrace SINK=/tmp/bench-bin/collector-sink
BENCH=${BENCH_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared/bench} OUTDIR="" WATCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) PAIRS=$2; shift 2;;
    --duration) DURATION=$2; shift 2;;
    --conc) CONC=$2; shift 2;;
    --max-spans) MAX_SPANS=$2; shift 2;;
    --only) ONLY=$2; shift 2;;
    --label-suffix) SUFFIX=$2; shift 2;;
    --gymtrace) GYMTRACE=$2; shift 2;;
    --sink) SINK=$2; shift 2;;
    --bench) BENCH=$2; shift 2;;
    --outdir) OUTDIR=$2; shift 2;;
    --watch-rss) WATCH=$2; shift 2;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0;;
    --) shift; break;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2;;
  esac
done
EXTRA=("$@")
case "$ONLY" in both|gymtrace|sink) ;; *) echo "--only must be both, gymtrace or sink" >&2; exit 2;; esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${OUTDIR:-/tmp/bench-ingest-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
export LIMIT_BIN=${LIMIT_BIN:-/tmp/bench-bin/limit}

if [ "$ONLY" != sink ] && [ ! -x "$GYMTRACE" ]; then
  (cd "$ROOT" && go build -o "$GYMTRACE" ./cmd/gymtrace) || exit 1
fi
for bin in "$LIMIT_BIN" $([ "$ONLY" != gymtrace ] && echo "$SINK"); do
  [ -x "$bin" ] || { echo "missing $bin: build it as $BENCH/README.md says" >&2; exit 1; }
done

GT=(--label "gymtrace$SUFFIX" -- "$GYMTRACE" serve --headless
  --grpc-addr 127.0.0.1:4317 --http-addr 127.0.0.1:4318 --max-spans "$MAX_SPANS")
SK=(--label "sink$SUFFIX" -- "$SINK")
COMMON=(--load blast --conc "$CONC" --duration "$DURATION" --count log --runs 1 "${EXTRA[@]}")

# watch_rss FILE: every $WATCH s, "RSS t_s rss_mb" of whatever listens on the
# gRPC port (the receiver of the current run).
watch_rss() {
  local t0=$SECONDS pid
  while :; do
    pid=$(ss -ltnpH "sport = :4317" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2)
    if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
      awk -v t=$((SECONDS - t0)) '$1 == "VmRSS:" { printf "RSS %d %.1f\n", t, $2 / 1024 }' "/proc/$pid/status" >>"$1"
    fi
    sleep "$WATCH"
  done
}

echo "# bench-ingest pairs=$PAIRS duration=$DURATION conc=$CONC max_spans=$MAX_SPANS only=$ONLY extra=${EXTRA[*]:-} nproc=$(nproc) outdir=$OUTDIR"
for i in $(seq 1 "$PAIRS"); do
  for side in sink gymtrace; do
    [ "$ONLY" = both ] || [ "$ONLY" = "$side" ] || continue
    echo "# pair $i $side $(uptime | sed 's/.*load average/load average/')"
    if [ "$side" = sink ]; then args=("${COMMON[@]}" --outdir "$OUTDIR/sink-$i" "${SK[@]}")
    else args=("${COMMON[@]}" --outdir "$OUTDIR/gymtrace-$i" "${GT[@]}"); fi
    # ingest.sh's --label and -- must come last: COMMON first, then the side.
    WPID=""
    if [ "$WATCH" != 0 ]; then watch_rss "$OUTDIR/rss-$side-$i.txt" & WPID=$!; fi
    "$BENCH/ingest.sh" "${args[@]}" | grep '^INGEST ' | sed "s/ run=1 / run=$i /" | tee -a "$OUTDIR/summary.txt"
    if [ -n "$WPID" ]; then
      kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
      awk '$2 >= 60 { v = $3 + 0; if (n++ == 0 || v < mn) mn = v; if (v > mx) mx = v }
        END { if (n) printf "# rss after 60 s: min=%.1f MB max=%.1f MB samples=%d\n", mn, mx, n }' "$OUTDIR/rss-$side-$i.txt"
    fi
  done
done

echo "# medians [min..max]"
"$BENCH/summarize.sh" "$OUTDIR/summary.txt"
if [ "$ONLY" = both ]; then
  awk -v sfx="$SUFFIX" '
    function get(k,   i, kv) { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) return kv[2] } return "" }
    { r = get("run"); l = get("label"); v[l, r] = get("spans_per_s") + 0; c[l, r] = get("rx_cpu_us_per_span") + 0; if (r > n) n = r }
    END {
      for (r = 1; r <= n; r++) if (v["sink" sfx, r] > 0) {
        k++; ra[k] = v["gymtrace" sfx, r] / v["sink" sfx, r]
        printf "# pair %d: gymtrace/sink spans_per_s = %.2f (cpu_us_per_span gymtrace %.2f, sink %.2f)\n", r, ra[k], c["gymtrace" sfx, r], c["sink" sfx, r]
      }
      for (i = 2; i <= k; i++) { t = ra[i]; for (j = i - 1; j >= 1 && ra[j] > t; j--) ra[j+1] = ra[j]; ra[j+1] = t }
      if (k) printf "RATIO gymtrace/sink spans_per_s median_of_pairs=%.2f pairs=%d\n", (k % 2) ? ra[(k+1)/2] : (ra[k/2] + ra[k/2+1]) / 2, k
    }' "$OUTDIR/summary.txt"
fi
