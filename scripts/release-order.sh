#!/usr/bin/env bash
# Measures the order the release binary's functions are laid out in: scripts/release.order.
#
# Each command below runs once under Valgrind's callgrind (Debian's valgrind package) against a
# release build, and every function of the custody binary it executed is listed: functions that
# more of the commands run come first (start-up, argument parsing, the state), then those of
# fewer, each group in the binary's own address order. `make release` hands the list to lld
# (--symbol-ordering-file), which places the listed functions first and together, so that a
# command faults in the pages of the code it runs rather than pages scattered over the binary's
# 37 MiB of code: with the kernel mapping 64 KiB around every page fault, scattered code is most
# of a short command's resident memory (Benchmarks/README.md, target 5).
#
#   scripts/release-order.sh          # rewrites scripts/release.order
#
# Run it again when what the commands run at start-up changed much. A stale list only places
# code less well: lld ignores names that no longer exist (`--no-warn-symbol-ordering`), and
# functions it does not name are laid out after the listed ones, as they would be without it.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "release-order: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null
# Valgrind cannot read the DWARF of a Swift binary this large; the symbol table is what it needs.
strip --strip-debug -o "$WORK/custody" .build/release/custody
CUSTODY=$WORK/custody
export CUSTODY_MASTER_KEY_FILE=$WORK/master.key
STATE=(--state "$WORK/state")
head -c 1048576 /dev/urandom > "$WORK/file"

# run NAME COMMAND...: runs custody COMMAND under callgrind; lists the custody functions it
# executed in $WORK/NAME.functions (recursion levels, which callgrind marks 'N, folded).
NAMES=()
run() {
    local name=$1; shift
    valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$WORK/$name.callgrind" "$CUSTODY" "$@" > /dev/null 2> "$WORK/$name.log" \
        || { echo "release-order: custody $* failed under valgrind:" >&2; tail -5 "$WORK/$name.log" >&2; exit 1; }
    awk -v binary="$CUSTODY" '/^ob=/ { current = substr($0, 4) } /^fn=/ && current == binary { print substr($0, 4) }' \
        "$WORK/$name.callgrind" | sed "s/'[0-9]*\$//" | grep -v '^0x' | sort -u > "$WORK/$name.functions"
    NAMES+=("$name")
}

run help --help
run apply apply "${STATE[@]}" --bundle policies --platform ios
run decide decide "${STATE[@]}" < policies/examples.jsonl
run protect protect "${STATE[@]}" --owner alice@contoso.com "$WORK/file" "$WORK/file.protected"
run unprotect unprotect "${STATE[@]}" "$WORK/file.protected" "$WORK/file.out"
run info info "$WORK/file.protected"
cmp -s "$WORK/file" "$WORK/file.out" || { echo "release-order: the file did not come back as it was" >&2; exit 1; }

nm --defined-only -n "$CUSTODY" | awk '{ print $3 }' > "$WORK/address-order"
{
    echo "# The custody functions that commands run, in the order the release binary lays them out"
    echo "# (lld --symbol-ordering-file; lines starting with # are comments). Measured, not written by"
    echo "# hand: scripts/release-order.sh regenerates it and says when to."
    python3 - "$WORK" "${NAMES[@]}" <<'EOF'
import sys
work, names = sys.argv[1], sys.argv[2:]
position = {}
for index, line in enumerate(open(f"{work}/address-order")):
    position.setdefault(line.rstrip("\n"), index)
runs = {}
for name in names:
    for line in open(f"{work}/{name}.functions"):
        function = line.rstrip("\n")
        runs[function] = runs.get(function, 0) + 1
# Most commands first; within as many commands, the binary's own order (code of one module stays together).
for function in sorted(runs, key=lambda f: (-runs[f], position.get(f, len(position)), f)):
    print(function)
EOF
} > scripts/release.order
echo "scripts/release.order: $(grep -vc "^#" scripts/release.order) functions from ${#NAMES[@]} commands"
