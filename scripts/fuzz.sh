#!/usr/bin/env bash
# Runs every fuzz target for a while (default 60s each). `go test ./...` already
# runs each target's seed corpus; this explores beyond it. New failing inputs
# land in <package>/testdata/fuzz/<Target>/ — commit them with the fix.
#   scripts/fuzz.sh            # 60s per target
#   scripts/fuzz.sh 10m        # longer
# New coverage is minimized for at most 10s (the default, 60s, stalls short runs).
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-60s}
# Every fuzz target of the module, found in the test files, so a new one is
# never left out.
mapfile -t targets < <(grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$(dirname "$f"):|"
done)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi
for t in "${targets[@]}"; do
  pkg=${t%%:*} name=${t##*:}
  echo "== $name ($pkg, $time)"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$time" -fuzzminimizetime 10s
done
