#!/usr/bin/env bash
# `custody decide` beside two other policy engines on the same save-to queries, in one run:
# Cedar (cedarpy) and rego-cpp (regopy), through their public Python bindings, from PyPI into a
# virtual environment of their own (.build/peers-venv). Optional: without PyPI, or without a
# binding, it says so and exits 0. OPA's Go engine is not measured here: its Python binding
# (opa-golib-python-bindings) needs Python 3.14, and Debian 12 has 3.11; no Debian package
# carries OPA.
#
# What each engine is given, and why the answers are not compared: scripts/peers/bench_peers.py.
# Custody decides 1,000,000 save-to queries (all cores, to a file, the median of RUNS runs);
# Cedar the first CEDAR_COUNT of them, rego-cpp the first REGO_COUNT (its rate on this data is
# about 30 a second). Rates are by wall time; CPU time is printed beside each.
#
#   scripts/bench-peers.sh
#   RUNS=5 CEDAR_COUNT=200000 REGO_COUNT=1000 scripts/bench-peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
CEDAR_COUNT=${CEDAR_COUNT:-100000}
REGO_COUNT=${REGO_COUNT:-1000}
command -v /usr/bin/time >/dev/null || { echo "this benchmark times with GNU time: apt-get install time" >&2; exit 1; }
VENV=.build/peers-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import cedarpy, regopy" 2>/dev/null; then
    python3 -m venv "$VENV" || { echo "bench-peers: skipped: python3 -m venv failed (apt-get install python3-venv)"; exit 0; }
    # The versions this script was written against (cedarpy's prepared PolicySet and Entities,
    # regopy's compiled bundles).
    "$VENV/bin/pip" install --quiet cedarpy==4.12.2 regopy==1.5.2 || {
        echo "bench-peers: skipped: cedarpy and regopy could not be installed from PyPI"
        exit 0
    }
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
make --no-print-directory release >/dev/null
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
CUSTODY=.build/release/custody
# Save-to queries are 3 in 10 of the generated mix: 3,400,000 lines give a million of them.
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/mixed.jsonl" \
    --accounts 10000 --policies 50 --count 3400000
grep -m 1000000 '"action":"saveTo"' "$WORK/mixed.jsonl" >"$WORK/queries.jsonl"
count=$(wc -l <"$WORK/queries.jsonl")
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null 2>"$WORK/apply.err" || {
    cat "$WORK/apply.err" >&2
    exit 1
}
walls="" cpus=""
for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S" -o "$WORK/time" $CUSTODY decide --platform ios --state "$WORK/state" \
        --jobs "$(nproc)" <"$WORK/queries.jsonl" >"$WORK/answers.jsonl" 2>"$WORK/decide.err" || {
        cat "$WORK/decide.err" >&2
        exit 1
    }
    answers=$(wc -l <"$WORK/answers.jsonl")
    [ "$answers" -eq "$count" ] || { echo "custody decide answered $answers of $count queries" >&2; exit 1; }
    read -r wall user system <"$WORK/time"
    walls+="$wall "
    cpus+="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') "
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
wall=$(echo "$walls" | median)
cpu=$(echo "$cpus" | median)
printf 'engine\tqueries\twall s\tCPU s\tdecisions/s\n'
printf 'Custody (custody decide, %s cores, to a file, median of %s)\t%s\t%s\t%s\t%.0f\n' "$(nproc)" "$RUNS" \
    "$count" "$wall" "$cpu" "$(awk -v c="$count" -v w="$wall" 'BEGIN { print c / w }')"
"$VENV/bin/python" scripts/peers/bench_peers.py "$WORK/bundle" "$WORK/queries.jsonl" "$CEDAR_COUNT" "$REGO_COUNT"
