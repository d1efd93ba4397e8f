#!/usr/bin/env bash
# The decision service under load on loopback, measured with wrk (Debian's wrk package) beside a
# bare Hummingbird server that answers every POST with a constant body of the same size as a
# decision. All cases run alternately (each run: every case once), RUNS times; each figure is
# the median of its runs. wrk runs on the same machine as the server (the same cores), for the
# baseline and the service alike. With nginx installed (apt-get install nginx-light), nginx serving
# the same answer's bytes from a file is measured beside them too (issue 52's second peer).
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

# nginx, when installed (apt-get install nginx-light), serving the same answer's bytes from a
# file to the same POSTs: a static answer from a server written for speed, the ceiling an HTTP
# decision can be compared with. Its POSTs are answered from the file through the 405 page.
NGINX=""
if command -v nginx >/dev/null; then
    mkdir -p "$WORK/nginx/logs" "$WORK/nginx/html"
    curl -sf -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18080/v1/decisions \
        --data-binary @"$WORK/single.json" -o "$WORK/nginx/html/answer.json"
    cat >"$WORK/nginx/nginx.conf" <<CONF
user $(id -un);
worker_processes auto;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/json;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:18082;
        root $WORK/nginx/html;
        location / { try_files /answer.json =404; error_page 405 =200 /answer.json; }
    }
}
CONF
    nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' &
    NGINX=$!
    trap 'kill $SERVER ${BASELINE:-} ${NGINX:-} 2>/dev/null; wait; rm -rf "$WORK"' EXIT
    for _ in $(seq 100); do curl -sf -X POST http://127.0.0.1:18082/v1/decisions -d '{}' >/dev/null && break; sleep 0.1; done
    if ! kill -0 "$NGINX" 2>/dev/null || ! curl -sf -X POST http://127.0.0.1:18082/v1/decisions -d '{}' \
        | cmp -s - "$WORK/nginx/html/answer.json"; then
        echo "warning: nginx did not serve the answer; its case is left out:" >&2
        cat "$WORK/nginx/logs/error.log" >&2 || true
        kill "$NGINX" 2>/dev/null || true
        NGINX=""
    fi
fi

source scripts/bench-wrk.sh
wrk_post_script "$WORK/post.lua"
# A server's CPU time with its children's (nginx answers in its worker processes).
cpu_tree() {
    local total=0 process
    for process in "$1" $(pgrep -P "$1"); do total=$((total + $(cpu "$process"))); done
    echo "$total"
}


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
NGINX_CASE=""
if [ -n "$NGINX" ]; then
    NGINX_CASE=${#LABELS[@]}
    LABELS+=("nginx, the same $ANSWER-byte answer from a file")
    URLS+=("http://127.0.0.1:18082/v1/decisions")
    BODIES+=("$WORK/single.json")
    TYPES+=(application/json)
    CONNS+=("$CONNECTIONS")
    PER+=(1)
fi
declare -A RPS P50 P99 CPU
for run in $(seq "$RUNS"); do
    for index in "${!LABELS[@]}"; do
        pid=$SERVER; [ "$index" = 0 ] && pid=$BASELINE; [ "$index" = "$NGINX_CASE" ] && pid=$NGINX
        if [ "$index" = 4 ]; then $CUSTODY audit $STATE --decisions on >/dev/null; sleep 1.2; fi  # the service reads the setting once a second
        before=$(cpu_tree "$pid")
        line=$(BODY=${BODIES[$index]} TOKEN=$TOKEN CONTENT_TYPE=${TYPES[$index]} \
            wrk -t1 -c"${CONNS[$index]}" -d"${DURATION}s" --latency -s "$WORK/post.lua" "${URLS[$index]}" | grep '^RESULT')
        after=$(cpu_tree "$pid")
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
if [ -n "$NGINX" ]; then
    static=$(printf '%s\n' ${RPS[$NGINX_CASE]} | median)
    echo "single decision / nginx: $(awk -v s="$single" -v b="$static" 'BEGIN { printf "%.2f", s / b }') (target >= 0.60)"
fi

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
