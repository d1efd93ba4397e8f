#!/usr/bin/env bash
# Runs one stage of `make test` or `make check`: `stage.sh NAME COMMAND...` prints when it
# starts, runs COMMAND, and records its wall time (and its exit status) in
# .build/stage-times.tsv, which scripts/ci/summary.sh tabulates. The stage's status is
# COMMAND's.
set -uo pipefail
name=${1:?usage: stage.sh NAME COMMAND...}
shift
mkdir -p .build
echo "==> stage $name"
start=$(date +%s.%N)
"$@"
status=$?
end=$(date +%s.%N)
seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
printf '%s\t%s\t%s\n' "$name" "$seconds" "$status" >>.build/stage-times.tsv
echo "==> stage $name: ${seconds} s$([ "$status" = 0 ] || echo ", FAILED (status $status)")"
exit "$status"
