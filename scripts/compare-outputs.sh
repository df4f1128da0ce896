#!/usr/bin/env bash
# compare-outputs.sh - run two gymtrace binaries over every case of the
# real-Gym captures and report where their output differs: `check --json`,
# `preview --json` under default and per_rollout, and `export` as captured
# and under default. Exports are compared as sorted lists of (resource,
# span), since the order of resources in an export line follows a map.
#
# Usage: scripts/compare-outputs.sh BIN_A BIN_B [CASES_DIR]
#   CASES_DIR defaults to ../shared/fixtures/real-gym beside the repository;
#   a case is a directory holding console/* or otlp/*.gz.
# Prints one DIFF line per difference and, last, compared=N differ=M; exits 1
# when anything differs.
set -u
A=$1 B=$2
CASES=${3:-$(cd "$(dirname "$0")/../.." && pwd)/shared/fixtures/real-gym}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
spans() { # the export FILE as sorted lines, one a span with its resource
  python3 -c '
import json, sys
out = []
for line in open(sys.argv[1]):
    for rs in json.loads(line)["resourceSpans"]:
        res = json.dumps(rs.get("resource"), sort_keys=True)
        for ss in rs["scopeSpans"]:
            out += [res + json.dumps(s, sort_keys=True) for s in ss["spans"]]
print("\n".join(sorted(out)))' "$1"
}
n=0 bad=0
for d in "$CASES"/*/*/; do
  src=$(ls "$d"console/* "$d"otlp/*.gz 2>/dev/null) || true
  [ -n "$src" ] || continue
  for cmd in "check --json" "preview --json --spec default" "preview --json --spec per_rollout"; do
    n=$((n + 1))
    $A $cmd $src >"$TMP/a" 2>/dev/null; ra=$?
    $B $cmd $src >"$TMP/b" 2>/dev/null; rb=$?
    if [ $ra != $rb ] || ! cmp -s "$TMP/a" "$TMP/b"; then echo "DIFF $d $cmd (exit $ra, $rb)"; bad=$((bad + 1)); fi
  done
  for spec in "" "--spec default"; do
    n=$((n + 1))
    $A export $spec -o "$TMP/a.jsonl" $src >/dev/null 2>&1
    $B export $spec -o "$TMP/b.jsonl" $src >/dev/null 2>&1
    if [ "$(spans "$TMP/a.jsonl")" != "$(spans "$TMP/b.jsonl")" ]; then echo "DIFF $d export $spec"; bad=$((bad + 1)); fi
  done
done
echo "compared=$n differ=$bad"
[ $bad = 0 ]
