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
# The audited case answers with decision auditing on, from a fresh copy of an audited state each
# run; the ratio of its rate to the first case's is printed after the table.
#
# BASELINE adds three cases with another build of custody (one from an earlier commit, built with
# `make release` in a checkout of it), to /dev/null, to a file and audited, alternating with the
# others: a change measured against what it changed, in one run.
# Its answers must be the same bytes as this build's.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
COUNT=${COUNT:-1000000}
ACCOUNTS=${ACCOUNTS:-10000}
POLICIES=${POLICIES:-50}
command -v sqlite3 >/dev/null || { echo "this benchmark counts the audit log's entries with sqlite3: apt-get install sqlite3" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts "$ACCOUNTS" --policies "$POLICIES" --count "$COUNT"
CUSTODY=.build/release/custody
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null
# Decision auditing: each audited run starts from a copy of this state, so that every run
# inserts its entries into a log of the same size.
$CUSTODY apply --state "$WORK/audited-template" --bundle "$WORK/bundle" --platform ios >/dev/null
$CUSTODY audit --state "$WORK/audited-template" --decisions on >/dev/null
fresh_audited() { rm -f "$1" "$1-wal" "$1-shm"; cp "$1-template" "$1"; }

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

LABELS=("bundle in force (state), all cores, to /dev/null" "--bundle override, all cores, to /dev/null"
        "bundle in force, all cores, to a file" "bundle in force, one core, to /dev/null"
        "decision auditing on, all cores, to /dev/null")
ARGS=("--state $WORK/state --jobs $(nproc)" "--state $WORK/none --bundle $WORK/bundle --jobs $(nproc)"
      "--state $WORK/state --jobs $(nproc)" "--state $WORK/state --jobs 1" "--state $WORK/audited --jobs $(nproc)")
OUTS=(/dev/null /dev/null "$WORK/out.jsonl" /dev/null /dev/null)
BINARIES=("$CUSTODY" "$CUSTODY" "$CUSTODY" "$CUSTODY" "$CUSTODY")
AUDITED=("" "" "" "" "$WORK/audited")
if [ -n "${BASELINE:-}" ]; then
    $BASELINE apply --state "$WORK/baseline-state" --bundle "$WORK/bundle" --platform ios >/dev/null
    $BASELINE apply --state "$WORK/baseline-audited-template" --bundle "$WORK/bundle" --platform ios >/dev/null
    $BASELINE audit --state "$WORK/baseline-audited-template" --decisions on >/dev/null
    LABELS+=("BASELINE, bundle in force, all cores, to /dev/null" "BASELINE, bundle in force, all cores, to a file"
             "BASELINE, decision auditing on, all cores, to /dev/null")
    ARGS+=("--state $WORK/baseline-state --jobs $(nproc)" "--state $WORK/baseline-state --jobs $(nproc)"
           "--state $WORK/baseline-audited --jobs $(nproc)")
    OUTS+=(/dev/null "$WORK/baseline-out.jsonl" /dev/null)
    BINARIES+=("$BASELINE" "$BASELINE" "$BASELINE")
    AUDITED+=("" "" "$WORK/baseline-audited")
fi
declare -A WALL CPU
for _ in $(seq "$RUNS"); do
    for index in "${!LABELS[@]}"; do
        if [ -n "${AUDITED[$index]}" ]; then fresh_audited "${AUDITED[$index]}"; fi
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
audited=$(sqlite3 "$WORK/audited" "SELECT count(*) FROM audit_log WHERE kind = 'decision'" 2>/dev/null || echo "?")
echo "the last audited run's log holds $audited decision entries (expected $COUNT)"
# An audited run that lost an entry is a failure, not a figure.
[ "$audited" = "$COUNT" ] || { echo "the audited run's log holds $audited decision entries, not $COUNT" >&2; exit 1; }
for index in "${!LABELS[@]}"; do
    [ -z "${AUDITED[$index]}" ] && continue
    echo "audited / not audited, all cores, to /dev/null, ${LABELS[$index]%%,*}: $(awk -v a="$(printf '%s\n' ${WALL[$index]} | median)" -v b="$(printf '%s\n' ${WALL[$(( index == 4 ? 0 : 5 ))]} | median)" 'BEGIN { printf "%.2f", b / a }') of the rate"
done
lines=$(wc -l < "$WORK/out.jsonl")
[ "$lines" -eq "$COUNT" ] || { echo "expected $COUNT answers, got $lines" >&2; exit 1; }
if [ -n "${BASELINE:-}" ]; then
    cmp -s "$WORK/out.jsonl" "$WORK/baseline-out.jsonl" || { echo "the baseline's answers differ" >&2; exit 1; }
fi
