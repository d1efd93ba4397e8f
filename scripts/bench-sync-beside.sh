#!/usr/bin/env bash
# Decisions with a Graph sync or the console busy beside them (issue 28, target 7).
#
# `custody serve --graph` (release build) follows a Graph-shaped tenant on loopback
# (scripts/graph/tenant-server.py: USERS users, GROUP_COUNT groups, POLICIES policies). wrk drives
# decisions for DURATION seconds in three cases, alternated RUNS times:
#   alone    nothing else runs;
#   sync     POST /v1/graph/sync back to back (each one a whole sync of the unchanged tenant:
#            delta rounds, the bundle rebuilt and compared with the one in force), as many as
#            fit in the run;
#   console  an administrator's views (an account's page and decision grid, the overview, an
#            account search) asked back to back over one keep-alive connection;
#   admin    the same four views once a second, as a person clicking through them would.
# Both the single decision (10 connections) and the batch of 1,000 (2 connections) are measured.
# Per case: requests/s, decisions/s, p99, the server's CPU per request, and how many syncs or
# views ran beside; then each busy case's decisions/s over the alone case's (target >= 0.95).
#
#   scripts/bench-sync-beside.sh                      # 3 runs of 8 s, 100,000 users
#   RUNS=5 DURATION=10 USERS=20000 scripts/bench-sync-beside.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-8}
USERS=${USERS:-100000}; GROUP_COUNT=${GROUP_COUNT:-200}; POLICIES=${POLICIES:-50}
command -v wrk >/dev/null || { echo "this benchmark needs wrk: apt-get install wrk" >&2; exit 1; }

make --no-print-directory release >"${TMPDIR:-/tmp}/bench-sync-build.log" 2>&1 \
    || { cat "${TMPDIR:-/tmp}/bench-sync-build.log" >&2; exit 1; }
CUSTODY=.build/release/custody
WORK=$(mktemp -d)
TENANT=""; SERVER=""; BUSY=""
trap 'kill $TENANT $SERVER $BUSY 2>/dev/null; rm -rf "$WORK"' EXIT

python3 scripts/graph/tenant-server.py "$USERS" "$GROUP_COUNT" "$POLICIES" "$PWD" >"$WORK/port" &
TENANT=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
GRAPH="http://127.0.0.1:$(head -1 "$WORK/port")"
printf 'bench-secret' >"$WORK/secret"; chmod 600 "$WORK/secret"
cat >"$WORK/graph.json" <<JSON
{"tenantId": "contoso", "clientId": "bench", "clientSecretFile": "secret",
 "authority": "$GRAPH", "graphUrl": "$GRAPH/beta", "intervalSeconds": 86400}
JSON

export CUSTODY_MASTER_KEY_FILE=$WORK/master.key
STATE=(--state "$WORK/state")
TOKEN=$($CUSTODY tokens create "${STATE[@]}" --scope admin 2>/dev/null)
$CUSTODY serve "${STATE[@]}" --graph "$WORK/graph.json" --platform ios --listen 127.0.0.1:0 --log-level error \
    >"$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 600); do grep -q "http on" "$WORK/serve.log" && break; sleep 0.1; done
BASE="http://$(grep -o 'http on [0-9.:]*' "$WORK/serve.log" | head -1 | cut -d' ' -f3)"
# The first sync (every user, every group) runs at start; decisions wait for it.
for _ in $(seq 1200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz")" = 200 ] && break; sleep 0.25
done
curl -sf "$BASE/readyz" >/dev/null || { echo "the service never became ready:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
SYNC=$(curl -sf -X POST -H "Authorization: Bearer $TOKEN" "$BASE/v1/graph/sync")
echo "tenant: $USERS users, $GROUP_COUNT groups, $POLICIES policies; one sync of it unchanged: $SYNC"

# The queries: accounts of the synced tenant, the actions a service asks most.
python3 - "$WORK" "$USERS" <<'PY'
import json, random, sys
work, users = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
def query():
    owner = f"user{rng.randrange(users)}@contoso.com"
    kind = rng.randrange(4)
    if kind == 0:
        return {"action": "saveTo", "owner": owner, "location": "oneDriveForBusiness", "locationAccount": owner}
    if kind == 1:
        return {"action": "share", "owner": owner, "targets": ["com.microsoft.office.word", "com.getdropbox.Dropbox"]}
    if kind == 2:
        return {"action": "print", "account": owner}
    return {"action": "notifications", "account": owner}
lines = [json.dumps(query(), separators=(",", ":")) for _ in range(1000)]
open(f"{work}/batch.jsonl", "w").write("\n".join(lines) + "\n")
open(f"{work}/single.json", "w").write(lines[1] + "\n")
PY

source scripts/bench-wrk.sh
wrk_post_script "$WORK/post.lua"

ACCOUNT=user$((USERS / 2))%40contoso.com
VIEWS=("/console/views/accounts/$ACCOUNT" "/console/views/accounts/$ACCOUNT/grid" "/console/views/overview"
       "/console/views/accounts?q=user5")
busy() {  # what runs beside the decisions, until killed; counts its rounds in $WORK/rounds
    : >"$WORK/rounds"
    case $1 in
        sync) while :; do curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" "$BASE/v1/graph/sync" && echo >>"$WORK/rounds"; done ;;
        console)
            local urls=()
            for view in "${VIEWS[@]}"; do urls+=(-o /dev/null "$BASE$view"); done
            while :; do curl -s -H "Authorization: Bearer $TOKEN" "${urls[@]}" && echo >>"$WORK/rounds"; done ;;
        admin)
            local urls=()
            for view in "${VIEWS[@]}"; do urls+=(-o /dev/null "$BASE$view"); done
            while :; do curl -s -H "Authorization: Bearer $TOKEN" "${urls[@]}" && echo >>"$WORK/rounds"; sleep 1; done ;;
    esac
}

BESIDE=(alone sync console admin)
KINDS=(single batch)
declare -A RPS P99 CPU ROUNDS
for run in $(seq "$RUNS"); do
    for kind in "${KINDS[@]}"; do
        for beside in "${BESIDE[@]}"; do
            if [ "$kind" = single ]; then body=$WORK/single.json; url=$BASE/v1/decisions; conns=10; type=application/json
            else body=$WORK/batch.jsonl; url=$BASE/v1/decisions/batch; conns=2; type=application/x-ndjson; fi
            BUSY=""; : >"$WORK/rounds"
            if [ "$beside" != alone ]; then busy "$beside" & BUSY=$!; sleep 0.2; fi
            before=$(cpu "$SERVER")
            line=$(BODY=$body TOKEN=$TOKEN CONTENT_TYPE=$type wrk -t1 -c"$conns" -d"${DURATION}s" --latency \
                -s "$WORK/post.lua" "$url?platform=ios" | grep '^RESULT')
            after=$(cpu "$SERVER")
            if [ -n "$BUSY" ]; then kill "$BUSY" 2>/dev/null; wait "$BUSY" 2>/dev/null || true; BUSY=""; fi
            # A sync the loop asked for runs on without it: the next case starts once it ended.
            for _ in $(seq 600); do
                curl -s "$BASE/readyz" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["graph"]["running"])' && break
                sleep 0.1
            done
            read -r _ rps _ p99 errors <<<"$line"
            [ "$errors" = 0 ] || echo "warning: $kind $beside: $errors errors in run $run" >&2
            key=$kind/$beside
            RPS[$key]+="$rps "; P99[$key]+="$p99 "
            CPU[$key]+="$(cpu_per_request "$before" "$after" "$rps" "$DURATION") "
            ROUNDS[$key]+="$(wc -l <"$WORK/rounds") "
        done
    done
done

echo "decisions beside a Graph sync or console views, wrk -t1, ${DURATION}s a case, median of $RUNS alternating runs, $(nproc) cores shared by wrk, the service, the tenant server and curl"
for kind in "${KINDS[@]}"; do
    per=1; [ "$kind" = batch ] && per=1000
    alone=$(printf '%s\n' ${RPS[$kind/alone]} | median)
    for beside in "${BESIDE[@]}"; do
        key=$kind/$beside
        rps=$(printf '%s\n' ${RPS[$key]} | median)
        ratio=$(awk -v r="$rps" -v a="$alone" 'BEGIN { printf "%.2f", r / a }')
        rounds=""; [ "$beside" != alone ] && rounds=", $(printf '%s\n' ${ROUNDS[$key]} | median) $( [ "$beside" = sync ] && echo syncs || echo "view rounds") beside"
        printf '%-7s %-8s %9.0f req/s %10.0f decisions/s  p99 %7.2f ms  server CPU %7.1f µs/req  ratio to alone %s%s  (runs: %s)\n' \
            "$kind" "$beside" "$rps" "$(awk -v r="$rps" -v p="$per" 'BEGIN { print r * p }')" \
            "$(printf '%s\n' ${P99[$key]} | median)" "$(printf '%s\n' ${CPU[$key]} | median)" "$ratio" "$rounds" "${RPS[$key]}"
    done
done
echo "target: every busy case >= 0.95 of alone"
