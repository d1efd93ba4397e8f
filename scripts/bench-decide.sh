#!/usr/bin/env bash
# End-to-end throughput of `custody decide`: the release binary answering 1,000,000 generated
# JSON Lines queries on a 10,000-account, 50-policy bundle, parsing and printing included.
# Prints the median wall time of RUNS runs for each case and the decisions per second.
#
#   scripts/bench-decide.sh            # 5 runs
#   RUNS=9 COUNT=2000000 scripts/bench-decide.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
COUNT=${COUNT:-1000000}
ACCOUNTS=${ACCOUNTS:-10000}
POLICIES=${POLICIES:-50}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

swift build -c release --product custody >/dev/null
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts "$ACCOUNTS" --policies "$POLICIES" --count "$COUNT"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

run() { # label, jobs, output file
    local label=$1 jobs=$2 out=$3 times=()
    for _ in $(seq "$RUNS"); do
        local start end
        start=$(date +%s.%N)
        .build/release/custody decide --bundle "$WORK/bundle" --platform ios --jobs "$jobs" < "$WORK/queries.jsonl" > "$out"
        end=$(date +%s.%N)
        times+=("$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')")
    done
    local m
    m=$(printf '%s\n' "${times[@]}" | median)
    printf '%-34s median %6.3f s  %9.0f decisions/s  (runs: %s)\n' "$label" "$m" "$(awk -v c="$COUNT" -v t="$m" 'BEGIN { print c / t }')" "${times[*]}"
}

echo "custody decide, $COUNT queries, $ACCOUNTS accounts, $POLICIES policies, $(nproc) cores"
run "all cores, output to /dev/null" "$(nproc)" /dev/null
run "all cores, output to a file" "$(nproc)" "$WORK/out.jsonl"
run "one core, output to /dev/null" 1 /dev/null
lines=$(wc -l < "$WORK/out.jsonl")
[ "$lines" -eq "$COUNT" ] || { echo "expected $COUNT answers, got $lines" >&2; exit 1; }
