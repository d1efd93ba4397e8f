# Shared by the benchmarks that load the service with wrk (sourced, not run):
#   wrk_post_script FILE  writes the Lua script wrk posts with: the body from $BODY, the token
#                         from $TOKEN, Content-Type from $CONTENT_TYPE (application/json by
#                         default); it prints "RESULT requests/s p50-ms p99-ms errors"
#   cpu PID               the process's user + system time so far, in clock ticks ($TICKS a second)
#   cpu_per_request BEFORE AFTER RPS SECONDS   server CPU µs per request over a run
#   median                the median of the numbers on standard input

wrk_post_script() {
    cat > "$1" <<'LUA'
wrk.method = "POST"
local file = io.open(os.getenv("BODY"), "rb")
wrk.body = file:read("*a")
file:close()
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.headers["Content-Type"] = os.getenv("CONTENT_TYPE") or "application/json"
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.3f %.3f %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read))
end
LUA
}

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICKS=$(getconf CLK_TCK)
cpu_per_request() {
    awk -v b="$1" -v a="$2" -v t="$TICKS" -v r="$3" -v d="$4" 'BEGIN { printf "%.1f", (a - b) / t / (r * d) * 1e6 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
