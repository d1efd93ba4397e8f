#!/usr/bin/env bash
# Runs one stage of `make test` or `make check`: `stage.sh NAME COMMAND...` prints its name
# (under `make test`'s side-by-side lines, with the stage's output when it ends), runs COMMAND,
# and records its wall time, the CPU time it and its children used (user plus system), and its
# exit status in .build/stage-times.tsv, which scripts/ci/summary.sh tabulates. The stage's
# status is COMMAND's. A stage that runs longer than STAGE_TIMEOUT seconds (default 1800) is
# stopped and marked TIMED OUT (status 124), so that a hang ends with a log, not CI's kill.
set -uo pipefail
name=${1:?usage: stage.sh NAME COMMAND...}
shift
mkdir -p .build
echo "==> stage $name"
timing=$(mktemp)
TIMEFORMAT='%R %U %S'
exec 3>&2
{ time timeout --kill-after=30 "${STAGE_TIMEOUT:-1800}" "$@" 2>&3 3>&-; } 2>"$timing"
status=$?
exec 3>&-
read -r wall user system <"$timing"
rm -f "$timing"
seconds=$(awk -v w="$wall" 'BEGIN { printf "%.1f", w }')
cpu=$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.1f", u + s }')
printf '%s\t%s\t%s\t%s\n' "$name" "$seconds" "$status" "$cpu" >>.build/stage-times.tsv
if [ "$status" = 124 ]; then
    echo "==> stage $name: ${seconds} s (CPU ${cpu} s), TIMED OUT after ${STAGE_TIMEOUT:-1800} s"
else
    echo "==> stage $name: ${seconds} s (CPU ${cpu} s)$([ "$status" = 0 ] || echo ", FAILED (status $status)")"
fi
exit "$status"
