#!/usr/bin/env bash
# Runs one stage of `make test` or `make check`: `stage.sh NAME COMMAND...` prints when it
# starts, runs COMMAND, and records its wall time, the CPU time it and its children used (user
# plus system), and its exit status in .build/stage-times.tsv, which scripts/ci/summary.sh
# tabulates. The stage's status is COMMAND's.
set -uo pipefail
name=${1:?usage: stage.sh NAME COMMAND...}
shift
mkdir -p .build
echo "==> stage $name"
timing=$(mktemp)
TIMEFORMAT='%R %U %S'
exec 3>&2
{ time "$@" 2>&3; } 2>"$timing"
status=$?
exec 3>&-
read -r wall user system <"$timing"
rm -f "$timing"
seconds=$(awk -v w="$wall" 'BEGIN { printf "%.1f", w }')
cpu=$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.1f", u + s }')
printf '%s\t%s\t%s\t%s\n' "$name" "$seconds" "$status" "$cpu" >>.build/stage-times.tsv
echo "==> stage $name: ${seconds} s (CPU ${cpu} s)$([ "$status" = 0 ] || echo ", FAILED (status $status)")"
exit "$status"
