#!/usr/bin/env bash
# The end of a CI log: the time of each stage `make test` and `make check` ran
# (.build/stage-times.tsv, written by scripts/ci/stage.sh) and the 20 slowest tests of the
# Swift suite (from its log, .build/swift-test.log: Swift Testing's "passed after N seconds").
# `summary.sh STARTED` also prints the time elapsed since the moment in the file STARTED
# (seconds since the epoch, `date +%s.%N`): `make test` runs two lines of stages side by side,
# so the sum of its stages is more than the time it took.
set -uo pipefail
started=${1:-}
if [ -f .build/stage-times.tsv ]; then
    echo
    echo "Stage times (seconds; CPU is user plus system of the stage and its children, on 2 cores"
    echo "at most twice the wall time, the PostgreSQL server's not counted; make test's two lines"
    echo "of stages run side by side, so their sum is more than the time elapsed):"
    printf '  %-20s %8s %8s\n' stage wall CPU
    awk -F'\t' '{ printf "  %-20s %8s %8s%s\n", $1, $2, $4, ($3 == 0 ? "" : "  FAILED"); total += $2; cpu += $4 }
        END { printf "  %-20s %8.1f %8.1f\n", "sum", total, cpu }' .build/stage-times.tsv
fi
if [ -n "$started" ] && [ -f "$started" ]; then
    awk -v a="$(cat "$started")" -v b="$(date +%s.%N)" 'BEGIN { printf "  %-20s %8.1f  (wall, from the first stage to now)\n", "elapsed", b - a }'
fi
if [ -f .build/swift-test.log ]; then
    echo
    echo "The 20 slowest tests (wall, seconds; tests run in parallel):"
    # Lines such as: ✔ Test "name" with 3 test cases passed after 1.234 seconds.
    # (The mark before "Test" is one character of several bytes: matched as any run of
    # non-spaces, whatever the locale.)
    { grep -E '^[^ ]+ Test ".*(passed|failed) after [0-9.]+ seconds' .build/swift-test.log || true; } \
        | sed -E 's/^[^ ]+ Test (.*) (passed|failed) after ([0-9.]+) seconds.*/\3\t\1/' \
        | sort -t$'\t' -k1,1 -g -r | head -20 \
        | awk -F'\t' '{ name = $2; if (length(name) > 110) name = substr(name, 1, 107) "..."; printf "  %8.2f  %s\n", $1, name }'
fi
exit 0
