#!/usr/bin/env bash
# bench-ingest.sh - compare gymtrace's OTLP ingest (gRPC, HTTP protobuf) with
# the OpenTelemetry Collector's counting sink on this machine, in alternating
# runs (sink, gymtrace, sink, gymtrace, ...), so that load from other processes
# hits both alike. Each run is one `ingest.sh --runs 1`; at the end it prints the
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
#   --transport LIST   grpc, http or grpc,http: each pair runs sink and gymtrace
#                      once per transport; http is OTLP/HTTP protobuf to the
#                      HTTP port
#                      sent by `gymload blast -http` [grpc]
#   --shape S          telemetrygen: the yardstick's 512-span request; gym: a
#                      Gym-shaped request from `gymload req` (SERVER spans with
#                      the ASGI attributes, http receive/send children, CLIENT
#                      spans, gym.* spans) [telemetrygen]
#   --req FILE         send this request file instead (e.g. the yardstick's
#                      req-realgym-run-5072.bin); overrides --shape [none]
#   --profile          gymtrace writes a CPU profile per run to
#                      OUTDIR/LABEL-PAIR/cpu.pprof (go tool pprof -top BIN FILE) [off]
#   --ports G,H        the gRPC and HTTP ports both receivers listen on, on
#                      127.0.0.1 (pick free ones when another receiver holds
#                      the OTLP defaults) [4317,4318]
#   --gymload BIN      the Gym load tool [/tmp/bench-bin/gymload; built if missing]
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
#   scripts/bench-ingest.sh --pairs 3 --transport grpc,http --shape gym    # both transports, Gym load
set -u

PAIRS=3 DURATION=20s CONC=4 MAX_SPANS=2000000 ONLY=both SUFFIX="" TRANSPORTS=grpc SHAPE=telemetrygen PROFILE=0 REQFILE="" PORTS=4317,4318
GYMTRACE=/tmp/bench-bin/gymtrace SINK=/tmp/bench-bin/collector-sink GYMLOAD=/tmp/bench-bin/gymload
BENCH=${BENCH_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared/bench} OUTDIR="" WATCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) PAIRS=$2; shift 2;;
    --duration) DURATION=$2; shift 2;;
    --conc) CONC=$2; shift 2;;
    --max-spans) MAX_SPANS=$2; shift 2;;
    --only) ONLY=$2; shift 2;;
    --label-suffix) SUFFIX=$2; shift 2;;
    --transport) TRANSPORTS=$2; shift 2;;
    --shape) SHAPE=$2; shift 2;;
    --req) REQFILE=$2; shift 2;;
    --ports) PORTS=$2; shift 2;;
    --gymload) GYMLOAD=$2; shift 2;;
    --profile) PROFILE=1; shift;;
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
GPORT=${PORTS%,*} HPORT=${PORTS#*,}
case "$GPORT$HPORT" in *[!0-9]*|"") echo "--ports takes GRPC,HTTP port numbers" >&2; exit 2;; esac
case "$ONLY" in both|gymtrace|sink) ;; *) echo "--only must be both, gymtrace or sink" >&2; exit 2;; esac
case "$SHAPE" in telemetrygen|gym) ;; *) echo "--shape must be telemetrygen or gym" >&2; exit 2;; esac
for t in ${TRANSPORTS//,/ }; do
  case "$t" in grpc|http) ;; *) echo "--transport takes grpc, http or grpc,http" >&2; exit 2;; esac
done

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
if { [ "$SHAPE" = gym ] && [ -z "$REQFILE" ]; } || [[ ",$TRANSPORTS," = *,http,* ]]; then
  [ -x "$GYMLOAD" ] || (cd "$ROOT" && go build -o "$GYMLOAD" ./scripts/gymload) || exit 1
fi
REQ=()
if [ -n "$REQFILE" ]; then
  [ -r "$REQFILE" ] || { echo "cannot read $REQFILE" >&2; exit 1; }
  REQ=(--req "$REQFILE")
elif [ "$SHAPE" = gym ]; then
  "$GYMLOAD" req -o "$OUTDIR/req-gym.bin" | sed 's/^/# /' || exit 1
  REQ=(--req "$OUTDIR/req-gym.bin")
fi
# ingest.sh runs "$LIMIT_BIN blast -addr ... -in ..."; for HTTP the same
# flags go to gymload's blast with -http.
printf '#!/bin/sh\nshift\nexec %q blast -http "$@"\n' "$GYMLOAD" >"$OUTDIR/blast-http"
chmod +x "$OUTDIR/blast-http"

GTCMD=("$GYMTRACE" serve --headless --grpc-addr 127.0.0.1:$GPORT --http-addr 127.0.0.1:$HPORT --max-spans "$MAX_SPANS")
SINKCMD=("$SINK" -grpc 127.0.0.1:$GPORT -http 127.0.0.1:$HPORT)
COMMON=(--load blast --conc "$CONC" --duration "$DURATION" --count log --runs 1 "${REQ[@]}" "${EXTRA[@]}")

# watch_rss FILE: every $WATCH s, "RSS t_s rss_mb" of whatever listens on the
# gRPC port (the receiver of the current run).
watch_rss() {
  local t0=$SECONDS pid
  while :; do
    pid=$(ss -ltnpH "sport = :$GPORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2)
    if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
      awk -v t=$((SECONDS - t0)) '$1 == "VmRSS:" { printf "RSS %d %.1f\n", t, $2 / 1024 }' "/proc/$pid/status" >>"$1"
    fi
    sleep "$WATCH"
  done
}

echo "# bench-ingest ports=$GPORT,$HPORT pairs=$PAIRS duration=$DURATION conc=$CONC max_spans=$MAX_SPANS only=$ONLY transport=$TRANSPORTS shape=$SHAPE req=${REQFILE:-none} extra=${EXTRA[*]:-} nproc=$(nproc) outdir=$OUTDIR"
for i in $(seq 1 "$PAIRS"); do
  for tp in ${TRANSPORTS//,/ }; do
    tsfx="" tenv=() targs=(--endpoint 127.0.0.1:$GPORT)
    if [ "$tp" = http ]; then tsfx=-http tenv=(LIMIT_BIN="$OUTDIR/blast-http") targs=(--endpoint 127.0.0.1:$HPORT); fi
    for side in sink gymtrace; do
      [ "$ONLY" = both ] || [ "$ONLY" = "$side" ] || continue
      echo "# pair $i $side$tsfx $(uptime | sed 's/.*load average/load average/')"
      label=$side$tsfx$SUFFIX
      if [ "$side" = sink ]; then cmd=("${SINKCMD[@]}"); else cmd=("${GTCMD[@]}"); fi
      if [ "$side" = gymtrace ] && [ "$PROFILE" = 1 ]; then
        mkdir -p "$OUTDIR/$label-$i"; cmd+=(--cpuprofile "$OUTDIR/$label-$i/cpu.pprof")
      fi
      # ingest.sh's --label and -- must come last: COMMON first, then the side.
      args=("${COMMON[@]}" "${targs[@]}" --outdir "$OUTDIR/$label-$i" --label "$label" -- "${cmd[@]}")
      WPID=""
      if [ "$WATCH" != 0 ]; then watch_rss "$OUTDIR/rss-$label-$i.txt" & WPID=$!; fi
      env "${tenv[@]}" "$BENCH/ingest.sh" "${args[@]}" | grep '^INGEST ' | sed "s/ run=1 / run=$i /" | tee -a "$OUTDIR/summary.txt"
      if [ -n "$WPID" ]; then
        kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
        awk '$2 >= 60 { v = $3 + 0; if (n++ == 0 || v < mn) mn = v; if (v > mx) mx = v }
          END { if (n) printf "# rss after 60 s: min=%.1f MB max=%.1f MB samples=%d\n", mn, mx, n }' "$OUTDIR/rss-$label-$i.txt"
      fi
    done
  done
done

echo "# medians [min..max]"
"$BENCH/summarize.sh" "$OUTDIR/summary.txt"
if [ "$ONLY" = both ]; then
  # One ratio per transport: labels gymtrace<T><S> against sink<T><S>.
  awk '
    function get(k,   i, kv) { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) return kv[2] } return "" }
    { r = get("run"); l = get("label"); side = (l ~ /^sink/) ? "sink" : "gymtrace"; t = substr(l, length(side) + 1)
      ts[t] = 1; v[side, t, r] = get("spans_per_s") + 0; c[side, t, r] = get("rx_cpu_us_per_span") + 0; if (r > n) n = r }
    END {
      for (t in ts) {
        k = 0
        for (r = 1; r <= n; r++) if (v["sink", t, r] > 0 && v["gymtrace", t, r] > 0) {
          k++; ra[k] = v["gymtrace", t, r] / v["sink", t, r]
          printf "# pair %d%s: gymtrace/sink spans_per_s = %.2f (cpu_us_per_span gymtrace %.2f, sink %.2f)\n", r, t, ra[k], c["gymtrace", t, r], c["sink", t, r]
        }
        for (i = 2; i <= k; i++) { x = ra[i]; for (j = i - 1; j >= 1 && ra[j] > x; j--) ra[j+1] = ra[j]; ra[j+1] = x }
        if (k) printf "RATIO%s gymtrace/sink spans_per_s median_of_pairs=%.2f pairs=%d min=%.2f max=%.2f\n", t, (k % 2) ? ra[(k+1)/2] : (ra[k/2] + ra[k/2+1]) / 2, k, ra[1], ra[k]
      }
    }' "$OUTDIR/summary.txt"
fi
