#!/usr/bin/env bash
# End-to-end throughput of `custody decide`: the release binary answering 1,000,000 generated
# JSON Lines queries on a 10,000-account, 50-policy bundle, parsing and printing included.
#
# Cases run alternately (case 1, case 2, ..., then again) so that the machine's drift touches
# every case alike. For each case: the median wall time of RUNS runs, decisions per second from
# it, and the median CPU time (user + system) beside it.
#
#   scripts/bench-decide.sh            # 5 runs per case
#   RUNS=9 COUNT=2000000 scripts/bench-decide.sh
#   BASELINE=/path/to/an/older/custody scripts/bench-decide.sh
#
# BASELINE adds two cases with another build of custody (one from an earlier commit, built with
# `make release` in a checkout of it), to /dev/null and
# to a file, alternating with the others: a change measured against what it changed, in one run.
# Its answers must be the same bytes as this build's.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
COUNT=${COUNT:-1000000}
ACCOUNTS=${ACCOUNTS:-10000}
POLICIES=${POLICIES:-50}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts "$ACCOUNTS" --policies "$POLICIES" --count "$COUNT"
CUSTODY=.build/release/custody
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

LABELS=("bundle in force (state), all cores, to /dev/null" "--bundle override, all cores, to /dev/null"
        "bundle in force, all cores, to a file" "bundle in force, one core, to /dev/null")
ARGS=("--state $WORK/state --jobs $(nproc)" "--state $WORK/none --bundle $WORK/bundle --jobs $(nproc)"
      "--state $WORK/state --jobs $(nproc)" "--state $WORK/state --jobs 1")
OUTS=(/dev/null /dev/null "$WORK/out.jsonl" /dev/null)
BINARIES=("$CUSTODY" "$CUSTODY" "$CUSTODY" "$CUSTODY")
if [ -n "${BASELINE:-}" ]; then
    $BASELINE apply --state "$WORK/baseline-state" --bundle "$WORK/bundle" --platform ios >/dev/null
    LABELS+=("BASELINE, bundle in force, all cores, to /dev/null" "BASELINE, bundle in force, all cores, to a file")
    ARGS+=("--state $WORK/baseline-state --jobs $(nproc)" "--state $WORK/baseline-state --jobs $(nproc)")
    OUTS+=(/dev/null "$WORK/baseline-out.jsonl")
    BINARIES+=("$BASELINE" "$BASELINE")
fi
declare -A WALL CPU
for _ in $(seq "$RUNS"); do
    for index in "${!LABELS[@]}"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S" -o "$WORK/time" "${BINARIES[$index]}" decide --platform ios ${ARGS[$index]} < "$WORK/queries.jsonl" > "${OUTS[$index]}"
        read -r wall user system < "$WORK/time"
        WALL[$index]+="$wall "
        CPU[$index]+="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') "
    done
done

echo "custody decide, $COUNT queries, $ACCOUNTS accounts, $POLICIES policies, $(nproc) cores, $RUNS alternating runs per case"
for index in "${!LABELS[@]}"; do
    wall=$(printf '%s\n' ${WALL[$index]} | median)
    cpu=$(printf '%s\n' ${CPU[$index]} | median)
    printf '%-50s wall %6.2f s  %9.0f decisions/s  CPU %6.2f s  (wall runs: %s)\n' "${LABELS[$index]}" "$wall" \
        "$(awk -v c="$COUNT" -v t="$wall" 'BEGIN { print c / t }')" "$cpu" "${WALL[$index]}"
done
lines=$(wc -l < "$WORK/out.jsonl")
[ "$lines" -eq "$COUNT" ] || { echo "expected $COUNT answers, got $lines" >&2; exit 1; }
if [ -n "${BASELINE:-}" ]; then
    cmp -s "$WORK/out.jsonl" "$WORK/baseline-out.jsonl" || { echo "the baseline's answers differ" >&2; exit 1; }
fi
