#!/usr/bin/env bash
# Fleet mode, measured on loopback with a throwaway PostgreSQL (scripts/test-postgres.sh):
#
# 1. Propagation: CHANGES bundles applied, CHANGES tokens created and CHANGES wipes, each
#    through one of 3 replicas in turn, and the time until every replica has it in force (p50,
#    p99, max; a wipe is in force when every replica refuses an envelope it opened just before
#    from its cached key), from the commit (the writer's call returned) and from the writer's call
#    (Benchmarks' custody-fleet-propagation; the replicas are engines in one process, each with
#    its own connections and listener).
# 2. Event streams: 3 `custody serve` replicas on one PostgreSQL state, STREAMS Server-Sent
#    Events clients on each; CHANGES bundles PUT through each replica in turn, and the time until
#    every client on every replica has the change's `bundleApplied` event, from the commit (the
#    PUT answered) and from the PUT sent (Benchmarks' custody-sse-fanout with three --url).
# 3. Decisions per second of one replica, with its state in SQLite and in PostgreSQL: two
#    `custody serve` processes, wrk (10 connections, one decision per request) against each in
#    turn, RUNS rounds alternating (and which goes first alternating too); the median of each,
#    with the server's CPU time per request, and the per-round ratios.
#
#   scripts/bench-fleet.sh                    # 1,000 changes of each kind, 5 rounds of 10 s
#   CHANGES=200 RUNS=3 DURATION=5 scripts/bench-fleet.sh
set -euo pipefail
cd "$(dirname "$0")/.."

CHANGES=${CHANGES:-1000}
RUNS=${RUNS:-5}
DURATION=${DURATION:-10}
command -v wrk >/dev/null || { echo "this benchmark needs wrk: apt-get install wrk" >&2; exit 1; }

make -s release >/dev/null
(cd Benchmarks && swift build -c release --product custody-fleet-propagation >/dev/null && swift build -c release --product custody-benchgen >/dev/null \
    && swift build -c release --product custody-sse-fanout >/dev/null)
STREAMS=${STREAMS:-10}
WORK=$(mktemp -d)
POSTGRES=$(mktemp -d /tmp/custody-bench-postgres.XXXXXX)
trap 'kill ${SQLITE_SERVER:-} ${POSTGRES_SERVER:-} ${REPLICAS:-} 2>/dev/null; scripts/test-postgres.sh stop "$POSTGRES"; rm -rf "$WORK"' EXIT
URL=$(scripts/test-postgres.sh start "$POSTGRES")
CUSTODY=.build/release/custody
export CUSTODY_MASTER_KEY_FILE=$WORK/master.key

# Two bundles with different revisions for the propagation rounds: the example bundle, and
# the same with one more setting in its policy.
cp -r policies "$WORK/bundle-a"
cp -r policies "$WORK/bundle-b"
printf '\n' >> "$WORK/bundle-b/tenant.json"
python3 - "$WORK/bundle-b" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
for path in sorted(root.glob("*.json")):
    text = path.read_text()
    if '"printBlocked"' in text:
        path.write_text(text.replace('"printBlocked": false', '"printBlocked": true', 1).replace('"printBlocked":false', '"printBlocked":true', 1))
        break
PY
echo "== propagation ($CHANGES changes of each kind, 3 replicas)"
Benchmarks/.build/release/custody-fleet-propagation --url "$URL&schema=propagation" --bundle "$WORK/bundle-a" --bundle "$WORK/bundle-b" \
    --master-key "$WORK/master.key" --changes "$CHANGES"

echo "== event streams: $CHANGES bundles PUT through 3 replicas in turn, $STREAMS streams on each"
$CUSTODY apply --state "$URL&schema=streams" --bundle "$WORK/bundle-a" --platform ios >/dev/null
STREAMS_TOKEN=$($CUSTODY tokens create --state "$URL&schema=streams" --scope admin 2>/dev/null)
REPLICAS=""
for port in 18095 18096 18097; do
    $CUSTODY serve --state "$URL&schema=streams" --platform ios --listen "127.0.0.1:$port" --log-level error 2>/dev/null &
    REPLICAS="$REPLICAS $!"
done
for port in 18095 18096 18097; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
for bundle in bundle-a bundle-b; do
    python3 - "$WORK/$bundle" > "$WORK/$bundle.put.json" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
print(json.dumps({"files": {path.name: path.read_text() for path in sorted(root.glob("*.json"))}}))
PY
done
Benchmarks/.build/release/custody-sse-fanout --url http://127.0.0.1:18095 --url http://127.0.0.1:18096 --url http://127.0.0.1:18097 \
    --token "$STREAMS_TOKEN" --clients "$STREAMS" --rounds "$CHANGES" --bodies "$WORK/bundle-a.put.json" --bodies "$WORK/bundle-b.put.json"
kill $REPLICAS 2>/dev/null || true
REPLICAS=""

echo "== decisions per second of one replica: SQLite state beside PostgreSQL state"
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" --accounts 10000 --policies 50 --count 1000
head -1 "$WORK/queries.jsonl" > "$WORK/single.json"
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null
$CUSTODY apply --state "$URL&schema=decisions" --bundle "$WORK/bundle" --platform ios >/dev/null
SQLITE_TOKEN=$($CUSTODY tokens create --state "$WORK/state" --scope decide 2>/dev/null)
POSTGRES_TOKEN=$($CUSTODY tokens create --state "$URL&schema=decisions" --scope decide 2>/dev/null)
$CUSTODY serve --state "$WORK/state" --platform ios --listen 127.0.0.1:18090 --log-level error 2>/dev/null &
SQLITE_SERVER=$!
$CUSTODY serve --state "$URL&schema=decisions" --platform ios --listen 127.0.0.1:18091 --log-level error 2>/dev/null &
POSTGRES_SERVER=$!
for port in 18090 18091; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
done
curl -s http://127.0.0.1:18091/readyz; echo

source scripts/bench-wrk.sh
wrk_post_script "$WORK/post.lua"
measure() { # name pid port token
    local before after line
    before=$(cpu "$2")
    line=$(BODY="$WORK/single.json" TOKEN="$4" wrk -t2 -c10 -d"${DURATION}s" -s "$WORK/post.lua" "http://127.0.0.1:$3/v1/decisions" | grep '^RESULT')
    after=$(cpu "$2")
    read -r _ rps p50 p99 errors <<<"$line"
    echo "$1 $rps $p50 $p99 $errors $(python3 -c "print(f'{($after - $before) / $TICKS / ($rps * $DURATION) * 1e6:.1f}')")"
}
: > "$WORK/results"
# The order alternates too (ABBA): whichever server goes second in a round is not always the same.
for run in $(seq "$RUNS"); do
    if [ $((run % 2)) = 1 ]; then
        measure sqlite "$SQLITE_SERVER" 18090 "$SQLITE_TOKEN" >> "$WORK/results"
        measure postgres "$POSTGRES_SERVER" 18091 "$POSTGRES_TOKEN" >> "$WORK/results"
    else
        measure postgres "$POSTGRES_SERVER" 18091 "$POSTGRES_TOKEN" >> "$WORK/results"
        measure sqlite "$SQLITE_SERVER" 18090 "$SQLITE_TOKEN" >> "$WORK/results"
    fi
done
python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
by = {}
for name, rps, p50, p99, errors, cpu in rows:
    by.setdefault(name, []).append((float(rps), float(p50), float(p99), int(errors), float(cpu)))
print(f"{'state':10} {'requests/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10} errors  (median of {len(by['sqlite'])} alternating rounds)")
for name in ("sqlite", "postgres"):
    cols = list(zip(*by[name]))
    print(f"{name:10} {statistics.median(cols[0]):11.0f} {statistics.median(cols[1]):7.3f} {statistics.median(cols[2]):7.3f} {statistics.median(cols[4]):10.1f} {sum(cols[3])}")
ratios = [p[0] / s[0] for s, p in zip(by["sqlite"], by["postgres"])]
cpu = [p[4] / s[4] for s, p in zip(by["sqlite"], by["postgres"])]
print(f"postgres / sqlite requests/s, median of per-round ratios: {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
print(f"postgres / sqlite CPU per request, median of per-round ratios: {statistics.median(cpu):.3f}")
PY
