#!/usr/bin/env bash
# Runs one libFuzzer harness of Fuzz/Harnesses for a given time (see Fuzz/README.md).
#   scripts/fuzz.sh HARNESS SECONDS
# The fuzzing binary must be built first (`make fuzz-build`). New inputs go to
# .build-fuzz/corpus/HARNESS (the committed seeds in Fuzz/Corpus/HARNESS are read, never
# written); a crash, leak or hang is saved in .build-fuzz/artifacts/HARNESS/ and fails the run.
# The last lines of the log give executions per second and coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=${1:?usage: scripts/fuzz.sh HARNESS SECONDS}
seconds=${2:?usage: scripts/fuzz.sh HARNESS SECONDS}
binary=${FUZZ_BINARY:-.build-fuzz/debug/CustodyFuzz}
[ -x "$binary" ] || { echo "no fuzzing binary at $binary: run make fuzz-build" >&2; exit 2; }
[ -d "Fuzz/Corpus/$harness" ] || { echo "no seed corpus Fuzz/Corpus/$harness" >&2; exit 2; }
mkdir -p ".build-fuzz/corpus/$harness" ".build-fuzz/artifacts/$harness" .build-fuzz/logs
log=".build-fuzz/logs/$harness.log"
status=0
CUSTODY_FUZZ_HARNESS=$harness ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$binary" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=131072 -print_final_stats=1 \
    -artifact_prefix=".build-fuzz/artifacts/$harness/" \
    ".build-fuzz/corpus/$harness" "Fuzz/Corpus/$harness" > "$log" 2>&1 || status=$?
runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
coverage=$(grep -E '#[0-9]+.*cov: ' "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*corp: ([0-9]+).*/cov \1, ft \2, corpus \3/')
echo "$harness: ${seconds}s, ${runs:-?} executions, ${rate:-?}/s, ${coverage:-no coverage line} (log: $log)"
if [ "$status" -ne 0 ]; then
    echo "$harness: FAILED (exit $status); the input is in .build-fuzz/artifacts/$harness/:" >&2
    grep -E 'ERROR|SUMMARY|Fatal error|Test unit written' "$log" | head -20 >&2
    exit 1
fi
