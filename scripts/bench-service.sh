#!/usr/bin/env bash
# The decision service under load on loopback, measured with wrk (Debian's wrk package) beside a
# bare Hummingbird server that answers every POST with a constant body of the same size as a
# decision. All cases run alternately (each run: every case once), RUNS times; each figure is
# the median of its runs. wrk runs on the same machine as the server (the same cores), for the
# baseline and the service alike.
#
# For each case: requests/s, latency p50 and p99 (wrk's), and the server's CPU time per request
# (user + system of the server process over the run, from /proc). Then the change-to-receipt
# latency of a bundle change reaching CLIENTS connected event streams.
#
#   scripts/bench-service.sh                         # 3 runs of 10 s per case, 1,000 streams
#   RUNS=5 DURATION=20 CLIENTS=1000 scripts/bench-service.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-10}
CLIENTS=${CLIENTS:-1000}
command -v wrk >/dev/null || { echo "this benchmark needs wrk: apt-get install wrk" >&2; exit 1; }

make --no-print-directory release >/dev/null  # the binary users get (make release)
(cd Benchmarks && swift build -c release --product custody-http-baseline >/dev/null \
    && swift build -c release --product custody-sse-fanout >/dev/null && swift build -c release --product custody-benchgen >/dev/null)
WORK=$(mktemp -d)
CUSTODY=.build/release/custody
export CUSTODY_MASTER_KEY_FILE=$WORK/master.key
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" --accounts 10000 --policies 50 --count 1000
STATE="--state $WORK/state"
$CUSTODY apply $STATE --bundle "$WORK/bundle" --platform ios >/dev/null
TOKEN=$($CUSTODY tokens create $STATE --scope admin 2>/dev/null)
$CUSTODY serve $STATE --platform ios --listen 127.0.0.1:18080 --log-level error 2>/dev/null &
SERVER=$!
trap 'kill $SERVER ${BASELINE:-} 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/healthz >/dev/null && break; sleep 0.1; done

# The request bodies.
head -1 "$WORK/queries.jsonl" > "$WORK/single.json"
cp "$WORK/queries.jsonl" "$WORK/batch.jsonl"
head -c 1024 /dev/urandom > "$WORK/1k.bin"
curl -sf -X POST -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:18080/v1/protect?owner=user0@contoso.com&encrypt=true" \
    --data-binary @"$WORK/1k.bin" -o "$WORK/1k.cst"
ANSWER=$(curl -sf -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18080/v1/decisions --data-binary @"$WORK/single.json" | wc -c)
Benchmarks/.build/release/custody-http-baseline --port 18081 --bytes "$ANSWER" &
BASELINE=$!
for _ in $(seq 100); do curl -sf -X POST http://127.0.0.1:18081/constant >/dev/null && break; sleep 0.1; done

source scripts/bench-wrk.sh
wrk_post_script "$WORK/post.lua"


LABELS=("bare Hummingbird route, constant $ANSWER-byte body" "POST /v1/decisions, one query"
        "POST /v1/decisions/batch, 1,000 queries" "POST /v1/decisions/batch, 1,000 queries, reasons=false"
        "POST /v1/decisions/batch, 1,000 queries, auditing on" "POST /v1/protect, 1 KiB" "POST /v1/unprotect, 1 KiB")
URLS=("http://127.0.0.1:18081/constant" "http://127.0.0.1:18080/v1/decisions?platform=ios"
      "http://127.0.0.1:18080/v1/decisions/batch?platform=ios" "http://127.0.0.1:18080/v1/decisions/batch?platform=ios&reasons=false"
      "http://127.0.0.1:18080/v1/decisions/batch?platform=ios" "http://127.0.0.1:18080/v1/protect?owner=user0@contoso.com&encrypt=true"
      "http://127.0.0.1:18080/v1/unprotect")
BODIES=("$WORK/single.json" "$WORK/single.json" "$WORK/batch.jsonl" "$WORK/batch.jsonl" "$WORK/batch.jsonl" "$WORK/1k.bin" "$WORK/1k.cst")
TYPES=(application/json application/json application/x-ndjson application/x-ndjson application/x-ndjson application/octet-stream application/octet-stream)
CONNS=("$CONNECTIONS" "$CONNECTIONS" 2 2 2 "$CONNECTIONS" "$CONNECTIONS")
PER=(1 1 1000 1000 1000 1 1)
declare -A RPS P50 P99 CPU
for run in $(seq "$RUNS"); do
    for index in "${!LABELS[@]}"; do
        pid=$SERVER; [ "$index" = 0 ] && pid=$BASELINE
        if [ "$index" = 4 ]; then $CUSTODY audit $STATE --decisions on >/dev/null; sleep 1.2; fi  # the service reads the setting once a second
        before=$(cpu "$pid")
        line=$(BODY=${BODIES[$index]} TOKEN=$TOKEN CONTENT_TYPE=${TYPES[$index]} \
            wrk -t1 -c"${CONNS[$index]}" -d"${DURATION}s" --latency -s "$WORK/post.lua" "${URLS[$index]}" | grep '^RESULT')
        after=$(cpu "$pid")
        if [ "$index" = 4 ]; then $CUSTODY audit $STATE --decisions off >/dev/null; sleep 1.2; fi
        read -r _ rps p50 p99 errors <<<"$line"
        [ "$errors" = 0 ] || echo "warning: ${LABELS[$index]}: $errors errors in run $run" >&2
        RPS[$index]+="$rps "; P50[$index]+="$p50 "; P99[$index]+="$p99 "
        CPU[$index]+="$(cpu_per_request "$before" "$after" "$rps" "$DURATION") "
    done
done

echo "decision service on loopback, wrk -t1, ${DURATION}s per case, median of $RUNS alternating runs, $(nproc) cores shared with wrk"
for index in "${!LABELS[@]}"; do
    rps=$(printf '%s\n' ${RPS[$index]} | median)
    printf '%-58s %9.0f req/s (%10.0f decisions/s)  p50 %7.2f ms  p99 %7.2f ms  server CPU %7.1f µs/req  (req/s runs: %s)\n' \
        "${LABELS[$index]} [-c${CONNS[$index]}]" "$rps" "$(awk -v r="$rps" -v p="${PER[$index]}" 'BEGIN { print r * p }')" \
        "$(printf '%s\n' ${P50[$index]} | median)" "$(printf '%s\n' ${P99[$index]} | median)" "$(printf '%s\n' ${CPU[$index]} | median)" "${RPS[$index]}"
done
single=$(printf '%s\n' ${RPS[1]} | median); bare=$(printf '%s\n' ${RPS[0]} | median)
echo "single decision / bare route: $(awk -v s="$single" -v b="$bare" 'BEGIN { printf "%.2f", s / b }') (target >= 0.90)"

# A bundle change reaching CLIENTS open event streams.
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
tenant = '{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}]}'
for name, blocked in (("a", "true"), ("b", "false")):
    policy = '{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": %s}]}' % blocked
    open(f"{work}/put-{name}.json", "w").write(json.dumps({"files": {"tenant.json": tenant, "policies.json": policy}}))
PY
# The small bundle in force first: the change that replaces the 10,000-account tenant is not
# what this measures.
curl -sf -X PUT -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18080/v1/bundle --data-binary @"$WORK/put-b.json" >/dev/null
ulimit -n 65536 2>/dev/null || true
Benchmarks/.build/release/custody-sse-fanout --url http://127.0.0.1:18080 --token "$TOKEN" --clients "$CLIENTS" --rounds 20 \
    --bodies "$WORK/put-a.json" --bodies "$WORK/put-b.json"
