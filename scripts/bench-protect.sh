#!/usr/bin/env bash
# Protecting and unprotecting one large file with the release `custody` binary, side by side
# with `age -e` / `age -d` (Debian package `age`, X25519 recipient) on the same file in the same
# run. Prints, per tool and direction, the median of RUNS runs of wall seconds, CPU seconds
# (user + system) and peak resident memory, then the custody/age ratios. Also checks that peak
# memory stays flat from a 1 MiB file to the large one.
#
#   scripts/bench-protect.sh                 # 1 GiB, 3 runs
#   SIZE_MIB=256 RUNS=5 scripts/bench-protect.sh
#
# Needs GNU time (/usr/bin/time) and age; installs them with apt-get when missing and run as
# root. Uses about 4 × SIZE_MIB of disk under $TMPDIR (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
SIZE_MIB=${SIZE_MIB:-1024}

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

swift build -c release --product custody >/dev/null
CUSTODY=$PWD/.build/release/custody
export CUSTODY_MASTER_KEY_FILE=$WORK/master.key
STATE=$WORK/state
OWNER=5a1e0000-0000-4000-8000-000000000001
age-keygen -o "$WORK/age.key" 2>/dev/null
RECIPIENT=$(age-keygen -y "$WORK/age.key")

head -c $((SIZE_MIB << 20)) /dev/urandom > "$WORK/plain"
head -c $((1 << 20)) /dev/urandom > "$WORK/small"

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# once NAME COMMAND...: runs the command once under GNU time, appending wall, CPU (user +
# system) and peak RSS (MiB) to the lists of NAME.
declare -A WALLS CPUS RSSS
once() {
    local name=$1; shift
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > /dev/null
    read -r wall user sys rss < "$WORK/time"
    WALLS[$name]+="$wall "
    CPUS[$name]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }') "
    RSSS[$name]+="$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') "
}

# report NAME: prints the medians of NAME and sets WALL, CPU, RSS to them.
report() {
    local name=$1
    WALL=$(printf '%s\n' ${WALLS[$name]} | median)
    CPU=$(printf '%s\n' ${CPUS[$name]} | median)
    RSS=$(printf '%s\n' ${RSSS[$name]} | median)
    printf '%-26s wall %7.2f s   cpu %7.2f s   peak rss %6.1f MiB   (wall: %s)\n' "$name" "$WALL" "$CPU" "$RSS" "${WALLS[$name]% }"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

encrypt() {
    rm -f "$WORK/plain.custody" "$WORK/plain.age"
    once "custody protect" "$CUSTODY" protect --state "$STATE" --owner "$OWNER" --force-encrypt "$WORK/plain" "$WORK/plain.custody"
    once "age -e" age -e -r "$RECIPIENT" -o "$WORK/plain.age" "$WORK/plain"
}
decrypt() {
    rm -f "$WORK/back.custody" "$WORK/back.age"
    once "custody unprotect" "$CUSTODY" unprotect --state "$STATE" "$WORK/plain.custody" "$WORK/back.custody"
    once "age -d" age -d -i "$WORK/age.key" -o "$WORK/back.age" "$WORK/plain.age"
}

echo "$SIZE_MIB MiB of random data, $RUNS runs each (interleaved, after one warm-up), $(nproc) cores; age $(age --version)"
# Create the owner's key and warm the page cache outside the measured runs.
"$CUSTODY" protect --state "$STATE" --owner "$OWNER" --force-encrypt "$WORK/small" "$WORK/small.custody"
encrypt
decrypt
unset WALLS CPUS RSSS
declare -A WALLS CPUS RSSS
for _ in $(seq "$RUNS"); do
    encrypt
    decrypt
done

cmp -s "$WORK/plain" "$WORK/back.custody" || { echo "custody round trip differs" >&2; exit 1; }
cmp -s "$WORK/plain" "$WORK/back.age" || { echo "age round trip differs" >&2; exit 1; }

report "custody protect"; c_enc=("$WALL" "$CPU")
report "age -e"; a_enc=("$WALL" "$CPU")
report "custody unprotect"; c_dec=("$WALL" "$CPU")
report "age -d"; a_dec=("$WALL" "$CPU")

echo
echo "custody / age, medians (below 1.00: custody is cheaper)"
printf '  protect:   wall %s   cpu %s\n' "$(ratio "${c_enc[0]}" "${a_enc[0]}")" "$(ratio "${c_enc[1]}" "${a_enc[1]}")"
printf '  unprotect: wall %s   cpu %s\n' "$(ratio "${c_dec[0]}" "${a_dec[0]}")" "$(ratio "${c_dec[1]}" "${a_dec[1]}")"
echo "  (custody fsyncs the file and its directory before it renames into place; age does not sync)"

echo
echo "peak memory does not grow with the file"
for _ in $(seq "$RUNS"); do
    once "custody protect 1 MiB" "$CUSTODY" protect --state "$STATE" --owner "$OWNER" --force-encrypt "$WORK/small" "$WORK/small.custody"
    once "custody unprotect 1 MiB" "$CUSTODY" unprotect --state "$STATE" "$WORK/small.custody" "$WORK/small.back"
    once "custody --help" "$CUSTODY" --help
done
report "custody protect 1 MiB"
report "custody unprotect 1 MiB"
report "custody --help"
