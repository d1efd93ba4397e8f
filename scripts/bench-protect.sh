#!/usr/bin/env bash
# `custody protect` / `unprotect` of one large file beside `age -e` / `age -d` (Debian's age,
# X25519 recipient) on the same page-cached file, whole processes measured with GNU time.
#
# Method: every run does, in order, custody, age, and `age … && sync` for one direction, then the
# same for the other direction, so the commands alternate and share the machine's state; RUNS
# such rounds. Each figure is the median over the runs; each ratio is the median of the per-run
# ratios (custody / age in the same round), which is steadier than a ratio of medians on a
# shared machine where single runs swing by 2×. Custody fsyncs the file and its directory before
# it renames the file into place; age does not sync at all, so custody is also compared with
# `age … && sync` (which flushes everything dirty, age's output included), and the difference
# between those two age figures is what durability costs for this file. The whole set runs on
# all cores and again on one (taskset -c 0).
#
#   scripts/bench-protect.sh                       # 256 MiB and 1 GiB, 9 runs each
#   SIZES_MIB="256" RUNS=5 scripts/bench-protect.sh
#
# Prints, per size, core count and direction: wall, user CPU, user + system CPU and peak RSS of
# each command, and the ratios. Needs GNU time (/usr/bin/time), age and taskset; installs the
# first two with apt-get when missing and run as root. Uses about 4 × the largest size of disk
# under $TMPDIR (default /tmp). Builds the release binary as `make release` does.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-9}
SIZES_MIB=${SIZES_MIB:-256 1024}

missing=()
command -v age >/dev/null || missing+=(age)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get install -y "${missing[@]}" >/dev/null || { apt-get update >/dev/null && apt-get install -y "${missing[@]}" >/dev/null; }
    else
        echo "bench-protect: needs ${missing[*]} (apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null
CUSTODY=$PWD/.build/release/custody
export CUSTODY_MASTER_KEY_FILE=$WORK/master.key
STATE=(--state "$WORK/state")
OWNER=alice@contoso.com
age-keygen -o "$WORK/age.key" 2>/dev/null
RECIPIENT=$(age-keygen -y "$WORK/age.key")
"$CUSTODY" apply "${STATE[@]}" --bundle policies --platform ios >/dev/null

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# once NAME COMMAND...: runs the command once under GNU time (with $PIN in front), appending
# wall, user, user + system and peak RSS (MiB) to the lists of NAME.
declare -A WALL USER CPU RSS
once() {
    local name=$1; shift
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" $PIN "$@" > /dev/null
    read -r wall user sys rss < "$WORK/time"
    WALL[$name]+="$wall "
    USER[$name]+="$user "
    CPU[$name]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }') "
    RSS[$name]+="$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') "
}

# ratios A B FIELD: the median of the per-run ratios of A's and B's FIELD lists.
ratios() {
    local -n field=$3
    paste <(printf '%s\n' ${field[$1]}) <(printf '%s\n' ${field[$2]}) |
        awk '$2 > 0 { printf "%.4f\n", $1 / $2 }' | median
}

row() {
    local name=$1
    printf '  %-22s wall %6.2f s   user %6.2f s   user+sys %6.2f s   peak RSS %5.1f MiB\n' "$name" \
        "$(printf '%s\n' ${WALL[$name]} | median)" "$(printf '%s\n' ${USER[$name]} | median)" \
        "$(printf '%s\n' ${CPU[$name]} | median)" "$(printf '%s\n' ${RSS[$name]} | median)"
}

compare() {
    printf '  %-22s wall %5.2f   user %5.2f   user+sys %5.2f\n' "$1 / $2" \
        "$(ratios "$1" "$2" WALL)" "$(ratios "$1" "$2" USER)" "$(ratios "$1" "$2" CPU)"
}

round() {
    rm -f "$WORK/plain.cst" "$WORK/plain.age" "$WORK/plain.age2"
    once "custody protect" "$CUSTODY" protect "${STATE[@]}" --owner "$OWNER" --force-encrypt "$WORK/plain" "$WORK/plain.cst"
    once "age -e" age -e -r "$RECIPIENT" -o "$WORK/plain.age" "$WORK/plain"
    once "age -e && sync" sh -c 'age -e -r "$1" -o "$2" "$3" && sync' sh "$RECIPIENT" "$WORK/plain.age2" "$WORK/plain"
    rm -f "$WORK/back.cst" "$WORK/back.age" "$WORK/back.age2"
    once "custody unprotect" "$CUSTODY" unprotect "${STATE[@]}" "$WORK/plain.cst" "$WORK/back.cst"
    once "age -d" age -d -i "$WORK/age.key" -o "$WORK/back.age" "$WORK/plain.age"
    once "age -d && sync" sh -c 'age -d -i "$1" -o "$2" "$3" && sync' sh "$WORK/age.key" "$WORK/back.age2" "$WORK/plain.age"
}

echo "custody $(git rev-parse --short HEAD), $(age --version 2>&1 | head -1) (age), $(nproc) cores, $RUNS alternating runs per figure"
for size in $SIZES_MIB; do
    head -c $((size << 20)) /dev/urandom > "$WORK/plain"
    for cores in all one; do
        PIN=""
        [ "$cores" = one ] && PIN="taskset -c 0"
        unset WALL USER CPU RSS
        declare -A WALL USER CPU RSS
        round  # warm-up: the owner's key, the page cache
        unset WALL USER CPU RSS
        declare -A WALL USER CPU RSS
        for _ in $(seq "$RUNS"); do round; done
        cmp -s "$WORK/plain" "$WORK/back.cst" || { echo "custody round trip differs" >&2; exit 1; }
        cmp -s "$WORK/plain" "$WORK/back.age" || { echo "age round trip differs" >&2; exit 1; }
        echo
        echo "$size MiB, $cores core$([ "$cores" = all ] && echo s), medians of $RUNS runs"
        for name in "custody protect" "age -e" "age -e && sync" "custody unprotect" "age -d" "age -d && sync"; do row "$name"; done
        echo " ratios (median of per-run ratios; below 1.00 custody is cheaper)"
        compare "custody protect" "age -e"
        compare "custody protect" "age -e && sync"
        compare "custody unprotect" "age -d"
        compare "custody unprotect" "age -d && sync"
    done
done

echo
echo "peak RSS does not grow with the file (1 MiB beside the figures above)"
head -c $((1 << 20)) /dev/urandom > "$WORK/small"
PIN=""
unset WALL USER CPU RSS
declare -A WALL USER CPU RSS
for _ in $(seq "$RUNS"); do
    once "custody protect 1 MiB" "$CUSTODY" protect "${STATE[@]}" --owner "$OWNER" --force-encrypt "$WORK/small" "$WORK/small.cst"
    once "custody unprotect 1 MiB" "$CUSTODY" unprotect "${STATE[@]}" "$WORK/small.cst" "$WORK/small.back"
    once "custody --help" "$CUSTODY" --help
done
row "custody protect 1 MiB"
row "custody unprotect 1 MiB"
row "custody --help"
