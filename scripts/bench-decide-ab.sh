#!/usr/bin/env bash
# Two custody binaries side by side on one workload: `custody decide` over 1,000,000 generated
# queries (bench-decide.sh's generator: 10,000 accounts, 50 policies), RUNS runs each, the two
# alternating, under /usr/bin/time. Prints every run, then the medians of wall and of user +
# system CPU per binary. For checking that a change costs nothing against a build from before it.
#
#   scripts/bench-decide-ab.sh OLD_BINARY NEW_BINARY        # RUNS=5 by default
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
OLD=$(realpath "$1")
NEW=$(realpath "$2")
RUNS=${RUNS:-5}
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts 10000 --policies 50 --count 1000000
"$NEW" apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null 2>&1
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
declare -A WALL CPU
for run in $(seq "$RUNS"); do
    for name in old new; do
        binary=$OLD; [ "$name" = new ] && binary=$NEW
        /usr/bin/time -f "%e %U %S" -o "$WORK/time" "$binary" decide --platform ios --state "$WORK/state" --jobs "$(nproc)" \
            < "$WORK/queries.jsonl" > /dev/null
        read -r wall user system < "$WORK/time"
        echo "run $run $name: wall $wall s, user $user s, system $system s"
        WALL[$name]+="$wall "
        CPU[$name]+="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') "
    done
done
for name in old new; do
    wall=$(printf '%s\n' ${WALL[$name]} | median)
    printf '%s: wall %s s (%.0f decisions/s), CPU %s s (medians of %s runs)\n' "$name" "$wall" \
        "$(awk -v t="$wall" 'BEGIN { print 1000000 / t }')" "$(printf '%s\n' ${CPU[$name]} | median)" "$RUNS"
done
