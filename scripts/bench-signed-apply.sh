#!/usr/bin/env bash
# What verifying a signature adds to applying a bundle: `custody apply` of a 100,000-account,
# 50-policy bundle into a fresh state, unsigned into a state that trusts no key, against the
# same files signed (.custody-signature.json) into a state that trusts the signer. The signed
# apply also reads the signature file, hashes every file (SHA-256) and checks one Ed25519
# signature; the rest is the same.
#
# Runs alternate (unsigned, signed, unsigned, ...) so the machine's drift touches both alike;
# each run gets a fresh state made beforehand (not timed). For each case: the median wall time
# and the median CPU time (user + system) of RUNS runs, and the ratio signed / unsigned of
# both. Also `custody bundle verify` alone on the signed bundle (the verification by itself).
#
#   scripts/bench-signed-apply.sh            # 7 runs per case
#   RUNS=11 ACCOUNTS=100000 scripts/bench-signed-apply.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-7}
ACCOUNTS=${ACCOUNTS:-100000}
POLICIES=${POLICIES:-50}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/unsigned" --queries "$WORK/queries.jsonl" \
    --accounts "$ACCOUNTS" --policies "$POLICIES" --count 1
CUSTODY=.build/release/custody
cp -r "$WORK/unsigned" "$WORK/signed"
$CUSTODY bundle keygen --out "$WORK/signer.key" > "$WORK/signer.pub" 2>/dev/null
$CUSTODY bundle sign "$WORK/signed" --key "$WORK/signer.key" --sequence 1 >/dev/null

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
timed() { # label-index, command...
    local index=$1; shift
    /usr/bin/time -f "%e %U %S" -o "$WORK/time" "$@" >/dev/null 2>&1
    read -r wall user system < "$WORK/time"
    WALL[$index]+="$wall "
    CPU[$index]+="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.3f", u + s }') "
}

declare -A WALL CPU
for run in $(seq "$RUNS"); do
    # Fresh states, made before the clock starts: one trusting no key, one trusting the signer.
    $CUSTODY tokens create --state "$WORK/u$run" --scope read >/dev/null 2>&1
    $CUSTODY trust add --state "$WORK/s$run" --public-key "$(cat "$WORK/signer.pub")" >/dev/null
    timed 0 $CUSTODY apply --state "$WORK/u$run" --bundle "$WORK/unsigned" --platform ios
    timed 1 $CUSTODY apply --state "$WORK/s$run" --bundle "$WORK/signed" --platform ios
    timed 2 $CUSTODY bundle verify "$WORK/signed" --public-key "$(cat "$WORK/signer.pub")"
    rm -rf "$WORK/u$run" "$WORK/s$run"
done

bytes=$(cat "$WORK"/unsigned/*.json | wc -c)
echo "custody apply, $ACCOUNTS accounts, $POLICIES policies, $bytes bytes of bundle, $RUNS alternating runs per case"
LABELS=("apply, unsigned, no trusted key" "apply, signed, signer trusted" "bundle verify alone (signed)")
for index in 0 1 2; do
    wall=$(printf '%s\n' ${WALL[$index]} | median)
    cpu=$(printf '%s\n' ${CPU[$index]} | median)
    printf '%-36s wall %6.3f s  CPU %6.3f s  (wall runs: %s)\n' "${LABELS[$index]}" "$wall" "$cpu" "${WALL[$index]}"
done
w0=$(printf '%s\n' ${WALL[0]} | median); w1=$(printf '%s\n' ${WALL[1]} | median)
c0=$(printf '%s\n' ${CPU[0]} | median); c1=$(printf '%s\n' ${CPU[1]} | median)
awk -v a="$w0" -v b="$w1" -v c="$c0" -v d="$c1" 'BEGIN {
    printf "signed / unsigned: wall %.3f (+%.1f%%), CPU %.3f (+%.1f%%)\n", b / a, (b / a - 1) * 100, d / c, (d / c - 1) * 100 }'
