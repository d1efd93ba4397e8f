#!/usr/bin/env bash
# The contract checks: docs/openapi.json describes exactly what the service does.
#
#   scripts/contract/run.sh BINARY        (make test: scripts/contract/run.sh .build/debug/custody)
#
# With tools no one here wrote, pinned below, in a throwaway virtualenv (.build/contract-venv,
# made again whenever the pins change):
#   0. openapi-spec-validator validates the document against the OpenAPI 3.1 specification (its
#      meta-schema and its rules: every $ref resolves, parameters are unique, ...).
#   a. schemathesis runs the document (the file, docs/openapi.json, not the served copy) against
#      BINARY serving the example bundle (policies/) for iOS with a throwaway state, on a free
#      loopback port: bounded examples per operation, its coverage, fuzzing and stateful phases
#      (the document's links), and the checks in CHECKS below. A server error or an answer the
#      document does not describe fails the run.
#   b. openapi-python-client generates a client from the document; it is installed in the
#      virtualenv, and readme_examples.py does every example of the README's service section
#      with it and nothing else, against a second service with a fresh state.
#   c. service_checks.py checks, against the document, what schemathesis cannot: that the served
#      /openapi.json is docs/openapi.json byte for byte, the event stream (which schemathesis
#      leaves out), and the answers every route gives whatever its operation (405, 501, 404,
#      408, 413, 415, 417, 431).
# Each check prints PASS or FAIL; the last line is `contract: N passed, M failed`, and the exit
# status is 1 when any failed. Whatever happens, the services started here are stopped and the
# temporary directory removed (trap on EXIT).
#
# When PyPI cannot be reached (and the pinned tools are not installed already), the checks are
# skipped, saying why, with exit status 0; under CI=true that is a failure instead.
#
# Environment: CONTRACT_MAX_EXAMPLES (default 150, per operation and phase), CONTRACT_SEED
# (default 1, so that a failure can be replayed; any integer), CONTRACT_WORKERS (default 1:
# schemathesis' threads make CPython 3.11's ast.parse fail now and then, "AST constructor
# recursion depth mismatch", inside hypothesis; the service is not what takes the time).
set -uo pipefail

SCHEMATHESIS_VERSION=4.32.5
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1
# wheel: pip builds the generated client (setup.py) into the virtualenv without the network.
WHEEL_VERSION=0.45.1
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
PINS="schemathesis==$SCHEMATHESIS_VERSION openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION wheel==$WHEEL_VERSION openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION"

# not_a_server_error and response_schema_conformance, status_code_conformance and
# content_type_conformance as asked; response_headers_conformance (the headers the document marks
# required, and their schemas), unsupported_method and allow_header_conformance (405 with Allow
# for the methods a path does not list), missing_required_header and ignored_auth (every /v1
# operation refuses a request without its token) because the document says those too.
# negative_data_rejection and positive_data_acceptance are not run: the service validates
# semantically what a schema cannot say (an unknown account is a 404, a bundle that does not load
# a 422, `encrypt` with `unmanaged` a 400, an unknown header is ignored as HTTP says it may be),
# so their verdicts would be about JSON Schema, not about this document.
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance,unsupported_method,allow_header_conformance,missing_required_header,ignored_auth

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 BINARY (an executable custody, such as .build/debug/custody)" >&2
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BINARY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CONTRACT=$ROOT/scripts/contract
DOCUMENT=$ROOT/docs/openapi.json
VENV=$ROOT/.build/contract-venv
MAX_EXAMPLES=${CONTRACT_MAX_EXAMPLES:-150}
SEED=${CONTRACT_SEED:-1}
WORKERS=${CONTRACT_WORKERS:-1}
# The service's body deadline, in seconds: short, so that service_checks.py sees a 408 soon.
BODY_TIMEOUT=2
cd "$ROOT" || exit 2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/custody-contract.XXXXXX")
SERVER_PID=""
STARTED=$(date +%s)

stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    SERVER_PID=""
}
CHILD=""
cleanup() {
    if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi
    stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "contract: interrupted" >&2; exit 130' INT TERM HUP

# Runs a command in the background and waits for it, so that a signal is handled at once (bash
# runs a trap only after the foreground command ends) and the cleanup can stop the command.
run() {
    "$@" &
    CHILD=$!
    wait "$CHILD"
    local status=$?
    CHILD=""
    return $status
}

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS $*" | tee -a "$WORK/run.results"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*" | tee -a "$WORK/run.results"; }
# Counts the PASS and FAIL lines a Python check printed.
count() {
    PASSED=$((PASSED + $(grep -c '^PASS ' "$1")))
    FAILED=$((FAILED + $(grep -c '^FAIL ' "$1")))
}
finish() {
    echo "contract: run took $(($(date +%s) - STARTED)) s"
    if [ "$FAILED" -gt 0 ]; then
        echo "contract: failed checks:"
        grep -h '^FAIL ' "$WORK"/*.results 2>/dev/null | sed 's/^/  /'
    fi
    echo "contract: $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit $?
}

# ---------------------------------------------------------------------------------------------
# The tools, pinned, in a virtualenv of their own.

pypi_reachable() {
    local index
    index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
    index=${index:-https://pypi.org/simple}
    python3 - "${index%/}/pip/" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=20).read(1)
PY
}

skip_or_fail() {
    if [ "${CI:-}" = "true" ]; then
        echo "contract: FAILED (CI=true, where the contract checks must run): $*"
        echo "contract: 0 passed, 1 failed"
        exit 1
    fi
    echo "contract: SKIPPED: $*"
    echo "contract: 0 passed, 0 failed, 1 skipped"
    exit 0
}

if ! command -v python3 >/dev/null; then
    skip_or_fail "python3 is not installed (Debian: apt-get install python3 python3-venv)"
fi
if [ "$(cat "$VENV/.contract-pins" 2>/dev/null)" != "$PINS" ]; then
    echo "contract: installing $PINS into $VENV"
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >"$WORK/venv.log" 2>&1; then
        # Debian's python3 makes virtualenvs only with python3-venv: installed here as the
        # Makefile installs the build's packages (as root, or with sudo).
        rm -rf "$VENV"
        sudo=$([ "$(id -u)" = 0 ] || echo sudo)
        if command -v apt-get >/dev/null && echo "contract: installing python3-venv (Debian)" &&
            $sudo apt-get update -qq >>"$WORK/venv.log" 2>&1 &&
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >>"$WORK/venv.log" 2>&1 &&
            python3 -m venv "$VENV" >>"$WORK/venv.log" 2>&1; then
            :
        else
            cat "$WORK/venv.log"
            rm -rf "$VENV"
            skip_or_fail "python3 -m venv does not work here, and python3-venv could not be installed"
        fi
    fi
    if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS >"$WORK/pip.log" 2>&1; then
        if pypi_reachable; then
            cat "$WORK/pip.log"
            rm -rf "$VENV"
            echo "contract: FAILED: pip could not install $PINS (PyPI answers; see above)"
            echo "contract: 0 passed, 1 failed"
            exit 1
        fi
        rm -rf "$VENV"
        skip_or_fail "PyPI cannot be reached, so $PINS cannot be installed ($(tail -1 "$WORK/pip.log"))"
    fi
    echo "$PINS" >"$VENV/.contract-pins"
fi
PYTHON=$VENV/bin/python
echo "contract: schemathesis $SCHEMATHESIS_VERSION, openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION, openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION; service $BINARY"

# ---------------------------------------------------------------------------------------------
# 0. The document itself, by the specification's own validator.

if "$VENV/bin/openapi-spec-validator" "$DOCUMENT" >"$WORK/validator.log" 2>&1; then
    pass "docs/openapi.json is a valid OpenAPI 3.1 document (openapi-spec-validator)"
else
    sed 's/^/  /' "$WORK/validator.log"
    fail "docs/openapi.json is a valid OpenAPI 3.1 document (openapi-spec-validator)"
fi

# ---------------------------------------------------------------------------------------------
# A service on the example bundle, with a state of its own, on a free loopback port.

start_server() {  # $1: a name for its state directory, $2: "--platform ios" or ""; sets BASE_URL, STATE, TOKEN_FILE
    STATE=$WORK/$1
    mkdir -p "$STATE"
    TOKEN_FILE=$STATE/token
    if ! (umask 077 && "$BINARY" tokens create --state "$STATE" --scope admin --name contract >"$TOKEN_FILE" 2>"$STATE/tokens.log"); then
        cat "$STATE/tokens.log"
        return 1
    fi
    for _ in 1 2 3 4 5; do
        local port
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        CUSTODY_MASTER_KEY_FILE=$STATE/master.key "$BINARY" serve --state "$STATE" --bundle policies $2 \
            --listen "127.0.0.1:$port" --body-timeout "$BODY_TIMEOUT" >"$STATE/server.log" 2>&1 &
        SERVER_PID=$!
        BASE_URL=http://127.0.0.1:$port
        for _ in $(seq 1 300); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            if python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "$BASE_URL/healthz" 2>/dev/null; then
                echo "contract: service on $BASE_URL (state $STATE)"
                return 0
            fi
            sleep 0.1
        done
        stop_server
        grep -q "already in use" "$STATE/server.log" || break  # only a port taken since is worth another try
    done
    echo "contract: the service did not start:"
    tail -20 "$STATE/server.log"
    return 1
}

# A service that died is a failure of the check that was running, with its last words (the
# crash and its first frames when it crashed, else the end of its log).
server_alive() {  # $1: what was running
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        pass "$1: the service is still running"
    else
        fail "$1: the service died"
        if grep -q "crashed:" "$STATE/server.log"; then
            grep -A6 "crashed:" "$STATE/server.log" | grep -v '^\s*$' | sed 's/^/    /'
        else
            tail -15 "$STATE/server.log" | sed 's/^/    /'
        fi
        wait "$SERVER_PID" 2>/dev/null
        SERVER_PID=""
    fi
}

# ---------------------------------------------------------------------------------------------
# a. schemathesis against the document.

echo
echo "== a. schemathesis $SCHEMATHESIS_VERSION: docs/openapi.json against the live service"
if start_server schemathesis "--platform ios"; then
    # GET /v1/events is left out of schemathesis: its 200 answer is a stream that ends only when
    # the service stops, so no generated request to it could be read to its end (the run would
    # wait for its request timeout and report an error). service_checks.py checks the stream
    # against the document instead: frames, event names, ids, resume points, bad parameters.
    # From the temporary directory: schemathesis and hypothesis keep their caches and example
    # databases in the working directory, which must not be the repository (and a database of
    # an earlier run would make this one replay its cases).
    run env -C "$WORK" SCHEMATHESIS_HOOKS=$CONTRACT/hooks.py "$VENV/bin/schemathesis" --config-file "$CONTRACT/schemathesis.toml" run "$DOCUMENT" \
        --url "$BASE_URL" \
        --header "Authorization: Bearer $(tail -1 "$TOKEN_FILE")" \
        --checks "$CHECKS" \
        --phases examples,coverage,fuzzing,stateful \
        --max-examples "$MAX_EXAMPLES" \
        --seed "$SEED" \
        --workers "$WORKERS" \
        --request-timeout 20 \
        --exclude-operation-id events \
        --report junit --report-junit-path "$WORK/schemathesis.xml" \
        --no-color >"$WORK/schemathesis.log" 2>&1
    status=$?
    cat "$WORK/schemathesis.log"
    # One PASS or FAIL per operation, from its JUnit report.
    "$PYTHON" - "$WORK/schemathesis.xml" "$status" >"$WORK/schemathesis.results" <<'PY'
import sys
import xml.etree.ElementTree as ElementTree

path, status = sys.argv[1], int(sys.argv[2])
try:
    cases = ElementTree.parse(path).getroot().iter("testcase")
except (OSError, ElementTree.ParseError) as error:
    print(f"FAIL schemathesis: no report ({error}); exit status {status}")
    sys.exit()
for case in cases:
    problems = [child for child in case if child.tag in ("failure", "error")]
    name = case.get("name")
    if problems:
        what = "; ".join(((p.get("message") or p.text or "").strip().splitlines() or [p.tag])[0] for p in problems)
        print(f"FAIL schemathesis: {name}: {what}")
    else:
        print(f"PASS schemathesis: {name}")
PY
    if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$WORK/schemathesis.results"; then
        echo "FAIL schemathesis: the run exited $status (see its output above)" >>"$WORK/schemathesis.results"
    fi
    cat "$WORK/schemathesis.results"
    count "$WORK/schemathesis.results"
    server_alive "schemathesis"
    stop_server
else
    fail "schemathesis: the service did not start"
fi

# ---------------------------------------------------------------------------------------------
# b. A client generated from the document does the README's examples.

echo
echo "== b. openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION: a generated client does the README's examples"
CLIENT_READY=""
if run env -C "$WORK" PATH="$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate --path "$DOCUMENT" --meta setup \
    --output-path "$WORK/client" >"$WORK/generate.log" 2>&1; then
    cat "$WORK/generate.log"
    # Every operation of the document must have its module: a skipped one is a failure.
    missing=$("$PYTHON" - "$DOCUMENT" "$WORK/client" <<'PY'
import json, os, re, sys
document, client = json.load(open(sys.argv[1])), sys.argv[2]
package = next(p for p in os.listdir(client) if os.path.isdir(os.path.join(client, p, "api")))
generated = set(os.listdir(os.path.join(client, package, "api", "default")))
for item in document["paths"].values():
    for method, operation in item.items():
        if isinstance(operation, dict) and "operationId" in operation:
            module = re.sub(r"(?<!^)(?=[A-Z])", "_", operation["operationId"]).lower() + ".py"
            if module not in generated:
                print(operation["operationId"])
PY
)
    if [ -n "$missing" ]; then
        fail "client: the generator left out operations: $missing"
    elif "$VENV/bin/pip" install --quiet --no-deps --no-build-isolation --no-index --force-reinstall "$WORK/client" >"$WORK/install.log" 2>&1; then
        pass "client: generated from docs/openapi.json with every operation, and installed"
        CLIENT_READY=1
    else
        cat "$WORK/install.log"
        fail "client: the generated client does not install"
    fi
else
    cat "$WORK/generate.log"
    fail "client: openapi-python-client cannot generate a client from docs/openapi.json"
fi

if start_server service "--platform ios"; then
    if [ -n "$CLIENT_READY" ]; then
        run "$PYTHON" "$CONTRACT/readme_examples.py" "$BASE_URL" "$TOKEN_FILE" >"$WORK/readme.results" 2>&1
        cat "$WORK/readme.results"
        count "$WORK/readme.results"
    fi

    # -----------------------------------------------------------------------------------------
    # c. What schemathesis cannot check, against the document, on the same service.
    echo
    echo "== c. the served document, the event stream, and what every route answers"
    run "$PYTHON" "$CONTRACT/service_checks.py" "$BASE_URL" "$TOKEN_FILE" "$STATE" "$BINARY" "$DOCUMENT" "$BODY_TIMEOUT" \
        >"$WORK/service.results" 2>&1
    cat "$WORK/service.results"
    count "$WORK/service.results"
    server_alive "the README examples and service checks"
    stop_server
else
    fail "README examples and service checks: the service did not start"
fi

# The example bundle holds iOS and Android policies: a service that knows no platform answers an
# account's policy with one report per platform, and refuses what needs one platform.
if start_server platformless ""; then
    run "$PYTHON" "$CONTRACT/platformless_checks.py" "$BASE_URL" "$TOKEN_FILE" "$DOCUMENT" >"$WORK/platformless.results" 2>&1
    cat "$WORK/platformless.results"
    count "$WORK/platformless.results"
    stop_server
else
    fail "platformless checks: the service did not start"
fi

echo
finish
