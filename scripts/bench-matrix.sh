#!/usr/bin/env bash
# End to end: the release `custody matrix run` on 100,000 generated cases (a 10,000-account,
# 50-policy bundle; one grid of 2,500 owners × 10 save locations × 4 location accounts with a
# table of expectations computed by the engine, so every case passes). Prints the median wall
# time of RUNS runs; the target is under 2 s.
#
#   scripts/bench-matrix.sh            # 5 runs
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" --count 1 \
    --matrix "$WORK/generated.matrix.json" --matrix-owners 2500

times=()
for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    last=$(.build/release/custody matrix run "$WORK/generated.matrix.json" | tail -1)
    end=$(date +%s.%N)
    times+=("$(awk "BEGIN { print $end - $start }")")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
printf 'matrix run: %s; median %.3f s over %d runs (target < 2 s)\n' "$last" "$median" "$RUNS"
