#!/usr/bin/env bash
# custody graph sync against a Graph-shaped tenant served on loopback (scripts/graph/tenant-server.py):
# USERS users (default 100,000) in GROUP_COUNT groups (200) and POLICIES policies (50), 999 members a page.
# Runs first and repeated syncs of the unchanged tenant, to a directory and into a state, each under
# /usr/bin/time -v: wall time, CPU time, peak RSS, and the requests the server answered.
# Usage: scripts/bench-graph.sh [BINARY] (default .build/release/custody; build it with make release)
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=${1:-.build/release/custody}
USERS=${USERS:-100000}; GROUP_COUNT=${GROUP_COUNT:-200}; POLICIES=${POLICIES:-50}
WORK=$(mktemp -d)
trap 'kill ${SERVER:-} 2>/dev/null; rm -rf "$WORK"' EXIT
python3 scripts/graph/tenant-server.py "$USERS" "$GROUP_COUNT" "$POLICIES" "$PWD" >"$WORK/port" &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT=$(head -1 "$WORK/port")
BASE="http://127.0.0.1:$PORT"
printf 'bench-secret' >"$WORK/secret"; chmod 600 "$WORK/secret"
requests() { curl -s "$BASE/_stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }
echo "tenant: $USERS users, $GROUP_COUNT groups, $POLICIES policies; binary $BINARY"
# Two ways: --out DIR (no state, so no delta: every sync reads every group), and --state
# (group members by delta from the second sync on). Each a first sync, then a repeat of the
# unchanged tenant.
run() {  # name, destination arguments...
    local name=$1; shift
    before=$(requests)
    /usr/bin/time -v "$BINARY" graph sync --tenant-id contoso --client-id bench --client-secret-file "$WORK/secret" \
        --authority "$BASE" --graph-url "$BASE/beta" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    after=$(requests)
    wall=$(grep "Elapsed (wall clock)" "$WORK/$name.err" | awk '{print $NF}')
    user=$(grep "User time" "$WORK/$name.err" | awk '{print $NF}')
    sys=$(grep "System time" "$WORK/$name.err" | awk '{print $NF}')
    rss=$(grep "Maximum resident" "$WORK/$name.err" | awk '{print $NF}')
    echo "$name: wall $wall, cpu ${user}s user + ${sys}s sys, peak RSS $((rss / 1024)) MiB, $((after - before)) requests; $(grep '^read' "$WORK/$name.err")"
    echo "  $(cat "$WORK/$name.out")"
}
export CUSTODY_MASTER_KEY_FILE="$WORK/master.key"
run "--out first " --out "$WORK/bundle"
run "--out repeat" --out "$WORK/bundle"
run "--state first " --state "$WORK/state"
run "--state repeat" --state "$WORK/state"
run "--state repeat" --state "$WORK/state"
echo "bundle: $(du -sh "$WORK/bundle" | cut -f1), tenant.json $(wc -c <"$WORK/bundle/tenant.json") bytes"
