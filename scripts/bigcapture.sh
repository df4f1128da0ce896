#!/usr/bin/env bash
# Writes a capture of about a million spans of Gym's real shape, for the
# analysis benchmarks (BenchmarkCaptureFile in cmd/gymtrace):
#   scripts/bigcapture.sh [OUT.jsonl] [ROLLOUTS]
# The simulated fleet (gymtrace demo, Gym G1, span_groups all) runs ROLLOUTS
# rollouts (default 9,300: ~520k spans) as fast as it can into a --record
# file; the record is then written a second time with every trace and span
# id changed in its first hex digit, as a second run of the same job would
# be: twice the spans, the same shape.
set -euo pipefail
out=${1:-/tmp/gymtrace-1m.jsonl}
rollouts=${2:-9300}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/gymtrace" ./cmd/gymtrace)
"$tmp/gymtrace" demo --headless --rate 0 --rollouts "$rollouts" --latency 1ms --concurrency 64 \
	--max-spans 4000000 --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --record "$tmp/run.jsonl" >/dev/null 2>"$tmp/demo.err" ||
	{ cat "$tmp/demo.err" >&2; exit 1; }
cp "$tmp/run.jsonl" "$out"
perl -pe 's/"(traceId|spanId|parentSpanId)":"([0-9a-f])/sprintf(q{"%s":"%x}, $1, hex($2) ^ 1)/ge' "$tmp/run.jsonl" >>"$out"
echo "$out: $(wc -l <"$out") requests, $(grep -o '"spanId"' "$out" | wc -l) spans" >&2
