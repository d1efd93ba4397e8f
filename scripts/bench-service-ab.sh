#!/usr/bin/env bash
# Two builds of the decision service side by side: what a change costs on the decision path.
# Each binary serves its own copy of one state (the same 10,000-account, 50-policy bundle) on its
# own port, both running throughout; wrk sends `POST /v1/decisions` (one query, 10 keep-alive
# connections) to A, then B, then B, then A, ... RUNS times each (ABBA: a drift of the machine
# over the run favours neither). Per binary: the median
# requests/s, p50 and p99 latency (wrk's), and the server's CPU time per request (user + system
# of its process over the run, from /proc); then B's ratio to A.
#
# CASE=batch sends `POST /v1/decisions/batch` with the 1,000 generated queries instead (2
# connections, as scripts/bench-service.sh does); CASE=audited-batch the same with decision
# auditing on in both states (each binary writes its own audit log); CASE=protect sends
# `POST /v1/protect` of 1 KiB for one account, encrypted (10 connections; each state its own
# master key).
#
# A_ARGS and B_ARGS add arguments to each side's `custody serve`; TRACE_B=1 adds
# `--otel-endpoint` to B's, exporting to the stand-in collector (scripts/otel/collector.py,
# started here, counting and dropping what it receives), which shares the two cores: what tracing
# costs the decision path when it is on (the same binary on both sides).
#
#   scripts/bench-service-ab.sh OLD_BINARY NEW_BINARY
#   RUNS=7 DURATION=10 scripts/bench-service-ab.sh OLD NEW
#   CASE=audited-batch RUNS=5 DURATION=8 scripts/bench-service-ab.sh OLD NEW
#   TRACE_B=1 scripts/bench-service-ab.sh NEW NEW
#
# SHADOW_B=1 sets a shadow bundle on B's state (another generated bundle: 51 policies, so that
# some decisions disagree): what deciding every live decision under a shadow too costs the
# decision path (the same binary on both sides). B's shadow counts (decided, dropped, disagreed)
# from its /metrics are printed at the end.
#
#   SHADOW_B=1 scripts/bench-service-ab.sh NEW NEW
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench-service-ab.sh A_BINARY B_BINARY}")
B=$(realpath "${2:?usage: bench-service-ab.sh A_BINARY B_BINARY}")
RUNS=${RUNS:-5}
DURATION=${DURATION:-5}
CASE=${CASE:-single}
case "$CASE" in
    single) CONNECTIONS=${CONNECTIONS:-10}; ROUTE=/v1/decisions; TYPE=application/json ;;
    batch | audited-batch) CONNECTIONS=${CONNECTIONS:-2}; ROUTE="/v1/decisions/batch?platform=ios"; TYPE=application/x-ndjson ;;
    protect) CONNECTIONS=${CONNECTIONS:-10}; ROUTE="/v1/protect?owner=user0@contoso.com&encrypt=true"; TYPE=application/octet-stream ;;
    *) echo "CASE is single, batch, audited-batch or protect" >&2; exit 64 ;;
esac
command -v wrk >/dev/null || { echo "this benchmark needs wrk: apt-get install wrk" >&2; exit 1; }

(cd Benchmarks && swift build -c release --product custody-benchgen >/dev/null)
WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
Benchmarks/.build/release/custody-benchgen --bundle "$WORK/bundle" --queries "$WORK/queries.jsonl" --accounts 10000 \
    --policies 50 --count 1000 >/dev/null
head -1 "$WORK/queries.jsonl" > "$WORK/single.json"
BODY=$WORK/single.json
[ "$CASE" = single ] || BODY=$WORK/queries.jsonl
if [ "$CASE" = protect ]; then
    head -c 1024 /dev/urandom > "$WORK/data.bin"
    BODY=$WORK/data.bin
fi
SCOPE=decide
KEYS=(--without-keys)
read -r -a EXTRA_A <<<"${A_ARGS:-}"
read -r -a EXTRA_B <<<"${B_ARGS:-}"
if [ "${TRACE_B:-0}" = 1 ]; then
    /usr/bin/python3 scripts/otel/collector.py - >"$WORK/collector" 2>/dev/null &
    PIDS+=($!)
    for _ in $(seq 50); do [ "$(wc -l <"$WORK/collector")" -ge 1 ] && break; sleep 0.1; done
    EXTRA_B+=(--otel-endpoint "http://127.0.0.1:$(head -1 "$WORK/collector")")
fi
if [ "${SHADOW_B:-0}" = 1 ]; then
    Benchmarks/.build/release/custody-benchgen --bundle "$WORK/shadow" --queries "$WORK/shadow-queries.jsonl" \
        --accounts 10000 --policies 51 --count 1 >/dev/null
fi
declare -A PORT TOKEN
for side in A B; do
    binary=${!side}
    mkdir -p "$WORK/$side"
    "$binary" apply --state "$WORK/$side/state" --bundle "$WORK/bundle" --platform ios >/dev/null 2>&1
    if [ "$CASE" = protect ]; then SCOPE=protect; KEYS=(--master-key-file "$WORK/$side/master.key"); fi
    TOKEN[$side]=$("$binary" tokens create --state "$WORK/$side/state" --scope "$SCOPE" 2>/dev/null | tail -1)
    [ "$CASE" = audited-batch ] && "$binary" audit --state "$WORK/$side/state" --decisions on >/dev/null
    if [ "$side" = B ] && [ "${SHADOW_B:-0}" = 1 ]; then
        "$binary" bundle shadow --state "$WORK/$side/state" "$WORK/shadow" >/dev/null
    fi
    PORT[$side]=$([ "$side" = A ] && echo 18091 || echo 18092)
    if [ "$side" = A ]; then extra=("${EXTRA_A[@]}"); else extra=("${EXTRA_B[@]}"); fi
    "$binary" serve --state "$WORK/$side/state" --listen "127.0.0.1:${PORT[$side]}" "${KEYS[@]}" --log-level error \
        "${extra[@]}" >/dev/null 2>&1 &
    PIDS+=($!)
    declare "PID_$side=$!"
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:${PORT[$side]}/healthz" >/dev/null && break; sleep 0.1; done
done

source scripts/bench-wrk.sh
wrk_post_script "$WORK/post.lua"
declare -A RPS P50 P99 CPU
for run in $(seq "$RUNS"); do
    # A then B on odd runs, B then A on even ones: a machine that slows (or speeds up) over the
    # run weighs on both sides alike, not on whichever always goes second.
    order="A B"
    [ $((run % 2)) = 0 ] && order="B A"
    for side in $order; do
        pid_name="PID_$side"; pid=${!pid_name}
        before=$(cpu "$pid")
        line=$(BODY=$BODY TOKEN=${TOKEN[$side]} CONTENT_TYPE=$TYPE wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency \
            -s "$WORK/post.lua" "http://127.0.0.1:${PORT[$side]}$ROUTE" | grep '^RESULT')
        after=$(cpu "$pid")
        read -r _ rps p50 p99 errors <<<"$line"
        [ "$errors" = 0 ] || echo "warning: $side: $errors errors in run $run" >&2
        RPS[$side]+="$rps "; P50[$side]+="$p50 "; P99[$side]+="$p99 "
        CPU[$side]+="$(cpu_per_request "$before" "$after" "$rps" "$DURATION") "
    done
done
echo "POST $ROUTE ($CASE)${A_ARGS:+, A: $A_ARGS}${B_ARGS:+, B: $B_ARGS}$([ "${TRACE_B:-0}" = 1 ] && echo ", B traced to a stand-in collector")$([ "${SHADOW_B:-0}" = 1 ] && echo ", B with a shadow bundle"), wrk -t1 -c$CONNECTIONS, ${DURATION}s a run, median of $RUNS alternating runs, $(nproc) cores shared with wrk"
for side in A B; do
    binary=${!side}
    printf '%s %-40s %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  server CPU %6.1f µs/req  (runs: %s)\n' "$side" "$binary" \
        "$(printf '%s\n' ${RPS[$side]} | median)" "$(printf '%s\n' ${P50[$side]} | median)" \
        "$(printf '%s\n' ${P99[$side]} | median)" "$(printf '%s\n' ${CPU[$side]} | median)" "${RPS[$side]}"
done
a=$(printf '%s\n' ${RPS[A]} | median); b=$(printf '%s\n' ${RPS[B]} | median)
ca=$(printf '%s\n' ${CPU[A]} | median); cb=$(printf '%s\n' ${CPU[B]} | median)
echo "B / A: requests/s $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }'), CPU per request $(awk -v a="$ca" -v b="$cb" 'BEGIN { printf "%.3f", b / a }')"
if [ "${SHADOW_B:-0}" = 1 ]; then
    echo "B's shadow: $(curl -s "http://127.0.0.1:${PORT[B]}/metrics" | grep -E '^custody_shadow_(decisions|dropped)_total' | tr '\n' ' ')disagreements $(curl -s "http://127.0.0.1:${PORT[B]}/metrics" | awk '/^custody_shadow_disagreements_total/ { sum += $NF } END { print sum + 0 }')"
fi
