#!/usr/bin/env bash
# Server time of the admin console's views on a big tenant: `custody serve` (release build) on a
# 100,000-account, 50-policy bundle, and the views an administrator opens most, each asked RUNS
# times over one keep-alive connection by curl on loopback. Per view: the median and p90 of
# curl's time to the first byte of the answer (the server's time plus a loopback round trip) and
# of the whole answer, with its size; the JSON API route each view renders beside it.
#
#   scripts/bench-console.sh                # 200 requests per view
#   RUNS=500 ACCOUNTS=100000 scripts/bench-console.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-200}
ACCOUNTS=${ACCOUNTS:-100000}
POLICIES=${POLICIES:-50}
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" \
    --accounts "$ACCOUNTS" --policies "$POLICIES" --count 1
CUSTODY=.build/release/custody
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" --platform ios >/dev/null 2>&1
TOKEN=$($CUSTODY tokens create --state "$WORK/state" --scope read 2>/dev/null)
$CUSTODY serve --state "$WORK/state" --listen 127.0.0.1:0 --without-keys > "$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q "http on" "$WORK/serve.log" && break; sleep 0.1; done
BASE="http://$(grep -o 'http on [0-9.:]*' "$WORK/serve.log" | head -1 | cut -d' ' -f3)"
ACCOUNT=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); a=t['accounts'][len(t['accounts'])//2]; print(a.get('upn') or a['oid'])" "$WORK/bundle/tenant.json")
ENCODED=$(python3 -c "import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=''))" "$ACCOUNT")

percentile() { sort -n | awk -v p="$1" '{ a[NR] = $1 } END { i = int(NR * p + 0.999); if (i < 1) i = 1; print a[i] }'; }
measure() { # label, path
    local urls=()
    for _ in $(seq "$RUNS"); do urls+=(-o /dev/null "$BASE$2"); done
    curl -s -H "Authorization: Bearer $TOKEN" -w '%{time_starttransfer} %{time_total} %{size_download}\n' \
        "${urls[@]}" > "$WORK/times"
    local first total size
    first=$(cut -d' ' -f1 "$WORK/times" | percentile 0.5)
    total=$(cut -d' ' -f2 "$WORK/times" | percentile 0.5)
    size=$(cut -d' ' -f3 "$WORK/times" | head -1)
    printf '%-44s first byte p50 %6.2f ms p90 %6.2f ms, whole p50 %6.2f ms, %7d bytes\n' "$1" \
        "$(awk -v t="$first" 'BEGIN { print t * 1000 }')" \
        "$(cut -d' ' -f1 "$WORK/times" | percentile 0.9 | awk '{ print $1 * 1000 }')" \
        "$(awk -v t="$total" 'BEGIN { print t * 1000 }')" "$size"
}

echo "console views, $ACCOUNTS accounts, $POLICIES policies, $RUNS requests each over one connection (account $ACCOUNT)"
measure "view: an account's page" "/console/views/accounts/$ENCODED"
measure "  API: GET /v1/accounts/{account}/policy" "/v1/accounts/$ENCODED/policy"
measure "  API: GET /v1/accounts/{account}/status" "/v1/accounts/$ENCODED/status"
measure "view: an account's decision grid" "/console/views/accounts/$ENCODED/grid"
measure "  API: GET /v1/accounts/{account}/grid" "/v1/accounts/$ENCODED/grid"
measure "view: account search (q=user5)" "/console/views/accounts?q=user5"
measure "  API: GET /v1/accounts?q=user5" "/v1/accounts?q=user5"
measure "view: account search, no match (every account read)" "/console/views/accounts?q=no-such-name"
measure "  API: GET /v1/accounts?q=no-such-name" "/v1/accounts?q=no-such-name"
GROUP=$(python3 -c "import json,sys,collections; t=json.load(open(sys.argv[1])); c=collections.Counter(g for a in t['accounts'] for g in a.get('groups',[])); print(c.most_common(1)[0][0])" "$WORK/bundle/tenant.json")
MEMBERS=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print(sum(sys.argv[2] in a.get('groups',[]) for a in t['accounts']))" "$WORK/bundle/tenant.json" "$GROUP")
RUNS=${GROUP_RUNS:-20} measure "view: a group's grid ($MEMBERS members)" "/console/views/groups/$GROUP/grid"
RUNS=${GROUP_RUNS:-20} measure "  API: GET /v1/groups/{group}/grid" "/v1/groups/$GROUP/grid"
measure "view: overview" "/console/views/overview"
measure "view: what-if (print)" "/console/views/whatif?action=print&account=$ENCODED"
measure "view: diff, no second revision kept" "/console/views/diff"
measure "view: events (the page; the feed is SSE)" "/console/views/events"

# A second revision (the first policy's printBlocked flipped), put in force through the
# service's own state; then the diff of the two, which decides every account of the tenant
# under both (fewer runs: it is the one heavy view).
python3 - "$WORK/bundle/policies.json" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
flipped = re.sub(r'"printBlocked": (true|false)', lambda m: '"printBlocked": ' + ('false' if m.group(1) == 'true' else 'true'), text, count=1)
open(sys.argv[1], "w").write(flipped)
PY
$CUSTODY apply --state "$WORK/state" --bundle "$WORK/bundle" >/dev/null 2>&1
sleep 2
RUNS=${DIFF_RUNS:-5} measure "view: diff of the last change (every account)" "/console/views/diff?to="
RUNS=${DIFF_RUNS:-5} measure "  API: GET /v1/bundle/diff" "/v1/bundle/diff"

