#!/usr/bin/env bash
# Replay of audited decisions (docs/impact.md): `custody replay` of COUNT (1,000,000) audited
# decisions, made by `custody decide` on a 10,000-account, 50-policy bundle, against a candidate
# that changes saveAsBlocked and printBlocked in every policy.
#
# For each size (COUNT, then a quarter of it, to show that memory does not grow with the window):
# the median wall time of RUNS runs, decisions replayed per second from it, the median CPU time
# (user + system) and the largest peak RSS. Runs of the two sizes alternate.
#
# Then what keeping the queries costs the audit log: the state's size after COUNT audited
# decisions with this build and, with BASELINE=/path/to/an/older/custody (one from before the log
# kept queries), with that one; the difference per million decisions.
#
#   scripts/bench-replay.sh
#   RUNS=9 COUNT=2000000 BASELINE=/tmp/old-custody scripts/bench-replay.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
COUNT=${COUNT:-1000000}
QUARTER=$((COUNT / 4))
command -v sqlite3 >/dev/null || { echo "this benchmark reads the state's size with sqlite3: apt-get install sqlite3" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts 10000 --policies 50 --count "$COUNT"
head -n "$QUARTER" "$WORK/queries.jsonl" > "$WORK/quarter.jsonl"
CUSTODY=.build/release/custody
cp -r "$WORK/bundle" "$WORK/candidate"
sed -i 's/"saveAsBlocked": false/"saveAsBlocked": true/g; s/"printBlocked": true/"printBlocked": false/g' \
    "$WORK/candidate/policies.json"

# An audited state of `$2` queries from binary `$1` into directory `$3`; prints its size in bytes
# once checkpointed.
audited_state() {
    "$1" apply --state "$3/" --bundle "$WORK/bundle" --platform ios >/dev/null
    "$1" audit --state "$3/" --decisions on >/dev/null
    "$1" decide --state "$3/" --platform ios < "$2" > /dev/null
    sqlite3 "$3/state.sqlite" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
    stat -c %s "$3/state.sqlite"
}
full_bytes=$(audited_state "$CUSTODY" "$WORK/queries.jsonl" "$WORK/full")
audited_state "$CUSTODY" "$WORK/quarter.jsonl" "$WORK/quarter" >/dev/null
empty_bytes=$(audited_state "$CUSTODY" /dev/null "$WORK/empty")

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
maximum() { sort -n | tail -1; }

LABELS=("$COUNT audited decisions" "$QUARTER audited decisions")
STATES=("$WORK/full" "$WORK/quarter")
declare -A WALL CPU RSS DECIDED
for _ in $(seq "$RUNS"); do
    for index in "${!LABELS[@]}"; do
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$CUSTODY" replay --state "${STATES[$index]}/" \
            --candidate "$WORK/candidate" --since 1d --json > "$WORK/report.json"
        read -r wall user system rss < "$WORK/time"
        WALL[$index]+="$wall "
        CPU[$index]+="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') "
        RSS[$index]+="$rss "
        DECIDED[$index]=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["decided"], r["flipped"], r["loosened"])' "$WORK/report.json")
    done
done

echo "custody replay, 10,000 accounts, 50 policies, $(nproc) cores, $RUNS alternating runs per size"
printf '%-28s %12s %10s %10s %14s %12s %s\n' case "wall (s)" "CPU (s)" "CPU/wall" "replayed/s" "peak RSS" "decided flipped loosened"
for index in "${!LABELS[@]}"; do
    wall=$(printf '%s\n' ${WALL[$index]} | median)
    cpu=$(printf '%s\n' ${CPU[$index]} | median)
    rss=$(printf '%s\n' ${RSS[$index]} | maximum)
    read -r decided _ <<< "${DECIDED[$index]}"
    rate=$(awk -v n="$decided" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')
    ratio=$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f", c / w }')
    printf '%-28s %12s %10s %10s %14s %9d MiB %s\n' "${LABELS[$index]}" "$wall" "$cpu" "$ratio" "$rate" $((rss / 1024)) "${DECIDED[$index]}"
done

echo
echo "the audit log after $COUNT audited decisions (state.sqlite, checkpointed; an empty audited state: $empty_bytes bytes)"
per_million() { awk -v b="$1" -v e="$empty_bytes" -v n="$COUNT" 'BEGIN { printf "%.1f MB per million decisions (%.1f bytes each)", (b - e) / n, (b - e) / n }'; }
echo "  this build: $full_bytes bytes, $(per_million "$full_bytes")"
if [ -n "${BASELINE:-}" ]; then
    baseline_bytes=$(audited_state "$BASELINE" "$WORK/queries.jsonl" "$WORK/baseline")
    echo "  BASELINE:   $baseline_bytes bytes, $(per_million "$baseline_bytes")"
fi
