"""What schemathesis cannot check from docs/openapi.json alone, checked against the document:

- the served /openapi.json is docs/openapi.json, byte for byte;
- GET /v1/events, which schemathesis leaves out (a stream that ends only when the service stops
  cannot be read to its end): its frames, event names (`StreamEventName`) and ids (`EventId`),
  replay from the log ending with `bundleApplied`, `reset` for a client from the future, a live
  `bundleApplied`, `unauthorized` when the stream's token is revoked, and bad resume points;
- what every route answers whatever its operation: 405 with `Allow` for each method a path
  does not take (as its operations' descriptions say), 501 for a method the service does not
  know (TRACE and QUERY, which the schemathesis run does not send: see schemathesis.toml), 404
  for a path that is no route, and the 408, 413 (on receive too), 415, 417 and 431 that every
  operation declares;
- every error body is the document's `Error`.

Run by scripts/contract/run.sh:
`python service_checks.py BASE_URL TOKEN_FILE STATE_DIR BINARY DOCUMENT BODY_TIMEOUT_SECONDS`.
Prints one `PASS name` or `FAIL name: why` line per check; exits 1 when any failed.
"""

import json
import re
import socket
import subprocess
import sys
import threading
import time
import traceback
from urllib.parse import urlsplit

import httpx
import jsonschema_rs

BASE, TOKEN_FILE, STATE, BINARY, DOCUMENT, BODY_TIMEOUT = sys.argv[1:7]
BODY_TIMEOUT = float(BODY_TIMEOUT)
TOKEN = open(TOKEN_FILE).read().split()[-1]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC_BYTES = open(DOCUMENT, "rb").read()
DOC = json.loads(DOC_BYTES)
HOST, PORT = urlsplit(BASE).hostname, urlsplit(BASE).port


def validator(name):
    return jsonschema_rs.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": DOC["components"]})


ERROR = validator("Error")
EVENT_ID = validator("EventId")
STREAM_EVENTS = set(DOC["components"]["schemas"]["StreamEventName"]["enum"])
failures = 0


def check(name):
    def run(function):
        global failures
        try:
            function()
            print(f"PASS service: {name}", flush=True)
        except Exception as error:
            failures += 1
            detail = str(error) or traceback.format_exc(limit=3)
            print(f"FAIL service: {name}: {type(error).__name__}: {detail}", flush=True)
        return function
    return run


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def expect_error(response, status, code, operation=None):
    """An error answer as the document describes it: the status, JSON, the `Error` schema, the code."""
    expect(response.status_code == status, f"status {response.status_code}, wanted {status}: {response.content[:200]!r}")
    expect(response.headers.get("content-type", "").startswith("application/json"), f"Content-Type {response.headers.get('content-type')!r}")
    body = response.json()
    errors = [str(e) for e in ERROR.iter_errors(body)]
    expect(not errors, f"not the document's Error: {errors} in {body}")
    expect(body["code"] == code, f"code {body['code']!r}, wanted {code!r}")
    if operation:
        method, path = operation
        expect(str(status) in DOC["paths"][path][method]["responses"], f"{method.upper()} {path} does not document {status}")
    return body


def raw_exchange(request: bytes, then=None, wait=10.0):
    """Sends bytes on a fresh connection; returns (status, headers, body) of the answer."""
    with socket.create_connection((HOST, PORT), timeout=wait) as connection:
        connection.sendall(request)
        if then:
            then(connection)
        data = b""
        while True:
            try:
                chunk = connection.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            match = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            if _ and match and len(rest) >= int(match.group(1)):
                break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    return status, headers, body


class Stream:
    """A Server-Sent Events stream read frame by frame on a thread, so that reads can time out."""

    def __init__(self, token=TOKEN, headers=None, params=None):
        self.frames = []
        self.status = None
        self.response_headers = {}
        self.ended = threading.Event()
        self.opened = threading.Event()
        self.client = httpx.Client(base_url=BASE, timeout=httpx.Timeout(5.0, read=None))
        self.thread = threading.Thread(target=self._read, args=({"Authorization": f"Bearer {token}", **(headers or {})}, params), daemon=True)
        self.thread.start()
        expect(self.opened.wait(10), "the stream did not open")

    def _read(self, headers, params):
        try:
            with self.client.stream("GET", "/v1/events", headers=headers, params=params) as response:
                self.status = response.status_code
                self.response_headers = response.headers
                self.opened.set()
                frame = {}
                for line in response.iter_lines():
                    if line == "":
                        if frame:
                            self.frames.append(frame)
                        frame = {}
                    elif line.startswith(":"):
                        self.frames.append({"comment": line})
                    else:
                        field, _, value = line.partition(": ")
                        frame[field] = value
        except Exception as error:
            self.frames.append({"exception": repr(error)})
        finally:
            self.opened.set()
            self.ended.set()

    def wait_for(self, name, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in self.frames:
                if frame.get("event") == name:
                    return frame
            if self.ended.is_set():
                break
            time.sleep(0.05)
        raise AssertionError(f"no `{name}` event within {timeout} s; frames: {self.frames[-5:]}")

    def close(self):
        self.client.close()

    def events(self):
        return [frame for frame in self.frames if "event" in frame]


def check_frames(frames):
    """Every frame is an event the document names, with an `EventId` and JSON data."""
    last = -1
    for frame in frames:
        expect(frame["event"] in STREAM_EVENTS, f"event {frame['event']!r} is not a StreamEventName")
        json.loads(frame["data"])
        if "id" in frame:
            expect(re.fullmatch(r"[0-9]+", frame["id"]) is not None, f"id {frame['id']!r}")
            identifier = int(frame["id"])
            expect(EVENT_ID.is_valid(identifier), f"id {identifier} is not an EventId")
            if frame["event"] != "reset":
                expect(identifier > last, f"ids out of order: {identifier} after {last}")
            last = identifier


client = httpx.Client(base_url=BASE, headers=AUTH, timeout=10)
revision = client.get("/v1/bundle").json()["revision"]


@check("GET /openapi.json is docs/openapi.json, byte for byte")
def served_document():
    served = httpx.get(f"{BASE}/openapi.json", timeout=10).content
    if served != DOC_BYTES:
        at = next((i for i, (a, b) in enumerate(zip(served, DOC_BYTES)) if a != b), min(len(served), len(DOC_BYTES)))
        line = DOC_BYTES[:at].count(b"\n") + 1
        raise AssertionError(
            f"the service serves {len(served)} bytes, docs/openapi.json has {len(DOC_BYTES)}; first difference at byte {at} "
            f"(line {line} of docs/openapi.json): the binary embeds Sources/CustodyServer/Resources/openapi.json when it is "
            "built (docs/openapi.json links to it): rebuild the binary")


@check("GET /v1/events?lastEventId=0 replays the log, ends it with bundleApplied, then ready")
def replay():
    stream = Stream(params={"lastEventId": "0"})
    try:
        expect(stream.status == 200, f"status {stream.status}")
        expect(stream.response_headers.get("content-type") == "text/event-stream", f"Content-Type {stream.response_headers.get('content-type')!r}")
        expect(stream.response_headers.get("cache-control") == "no-store", "Cache-Control")
        ready = stream.wait_for("ready")
        events = stream.events()
        check_frames(events)
        names = [e["event"] for e in events]
        expect("ready" in names and names.index("ready") == len(names) - 1, f"ready is not last: {names}")
        applied = [e for e in events if e["event"] == "bundleApplied"]
        expect(applied, f"no bundleApplied in the replay: {names}")
        expect(json.loads(applied[0]["data"])["revision"] == revision, "bundleApplied names another revision")
        position = json.loads(ready["data"])
        expect(position["revision"] == revision and EVENT_ID.is_valid(position["eventId"]), f"ready: {position}")
    finally:
        stream.close()


@check("Last-Event-ID newer than the state's newest: reset with the newest id, then ready")
def from_the_future():
    newest = client.get("/readyz").json()["eventId"]
    stream = Stream(headers={"Last-Event-ID": str(newest + 1000)})
    try:
        expect(stream.status == 200, f"status {stream.status}")
        reset = stream.wait_for("reset")
        stream.wait_for("ready")
        check_frames(stream.events())
        expect(int(reset["id"]) == json.loads(reset["data"])["eventId"] == newest, f"reset: {reset}")
    finally:
        stream.close()


@check("a live stream gets bundleApplied when PUT /v1/bundle puts a bundle in force")
def live_bundle():
    stream = Stream()
    try:
        stream.wait_for("ready")
        files = {name: open(f"policies/{name}").read() for name in
                 ["tenant.json", "all-staff.json", "app-configuration.json", "default.json", "finance-ios.json"]}
        files["contract-check.json"] = "{}"
        response = client.put("/v1/bundle", json={"files": files})
        expect(response.status_code == 200, f"PUT /v1/bundle: {response.status_code} {response.content[:300]!r}")
        applied = response.json()
        expect(applied["unchanged"] is False and applied["events"][-1] == "bundleApplied", f"applied: {applied}")
        frame = stream.wait_for("bundleApplied")
        expect(json.loads(frame["data"])["revision"] == applied["revision"], "bundleApplied names another revision")
        check_frames(stream.events())
        # Back to the example bundle, for the checks after this one.
        files.pop("contract-check.json")
        back = client.put("/v1/bundle", json={"files": files})
        expect(back.status_code == 200 and back.json()["revision"] == revision, f"re-applying the example bundle: {back.content[:300]!r}")
    finally:
        stream.close()


@check("a stream whose token is revoked ends with unauthorized; the token is then refused 401")
def revoked():
    made = subprocess.run([BINARY, "tokens", "create", "--state", STATE, "--scope", "events", "--name", "contract check"],
                          capture_output=True, text=True, timeout=30)
    expect(made.returncode == 0, f"tokens create: {made.stderr}")
    token = made.stdout.split()[-1]
    stream = Stream(token=token)
    try:
        stream.wait_for("ready")
        identifier = token.split("_")[1]
        revoke = subprocess.run([BINARY, "tokens", "revoke", "--state", STATE, identifier], capture_output=True, text=True, timeout=30)
        expect(revoke.returncode == 0, f"tokens revoke: {revoke.stderr}")
        stream.wait_for("unauthorized", timeout=5)
        expect(stream.ended.wait(5), "the stream did not end after unauthorized")
        check_frames(stream.events())
        refused = httpx.get(f"{BASE}/v1/events", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        expect_error(refused, 401, "unauthorized", ("get", "/v1/events"))
        expect(refused.headers.get("www-authenticate", "").startswith("Bearer"), "WWW-Authenticate")
    finally:
        stream.close()


@check("bad resume points are 400 invalid-parameter")
def bad_resume():
    for headers, params, parameter in [
        ({"Last-Event-ID": "-1"}, None, "Last-Event-ID"),
        ({"Last-Event-ID": "9223372036854775808"}, None, "Last-Event-ID"),
        (None, {"lastEventId": "x"}, "lastEventId"),
        (None, [("lastEventId", "1"), ("lastEventId", "2")], "lastEventId"),
        (None, {"lastEventID": "1"}, "lastEventID"),
    ]:
        response = client.get("/v1/events", headers=headers, params=params)
        body = expect_error(response, 400, "invalid-parameter", ("get", "/v1/events"))
        expect(body.get("parameter") == parameter, f"parameter {body.get('parameter')!r}, wanted {parameter!r}")


def concrete(path):
    # A path parameter stands for something the service has: the example account, one of its
    # groups, the revision in force (a kept revision).
    if "{revision}" in path:
        path = path.replace("{revision}", client.get("/v1/bundle").json()["revision"])
    return path.replace("{account}", "alice%40contoso.com").replace("{group}", "grp-finance")


@check("every path answers 405 with Allow (as its operations say) for the methods it does not take")
def other_methods():
    standard = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    for path, item in DOC["paths"].items():
        documented = {m.upper() for m in item if m in ("get", "put", "post", "delete", "options", "patch", "head")}
        if "GET" in documented:
            documented.add("HEAD")
        allow = ", ".join(m for m in standard if m in documented)
        for method, operation in item.items():
            expect(f"`Allow: {allow}`" in operation.get("description", ""), f"{method.upper()} {path}'s description does not say `Allow: {allow}`")
        for method in standard:
            if method in documented:
                continue
            response = client.request(method, concrete(path))
            expect(response.headers.get("allow") == allow, f"{method} {path}: Allow {response.headers.get('allow')!r}, wanted {allow!r}")
            if method == "HEAD":  # an answer to HEAD has no body
                expect(response.status_code == 405 and response.content == b"", f"HEAD {path}: {response.status_code}")
                continue
            body = expect_error(response, 405, "method-not-allowed")
            expect(body.get("allow") == allow.split(", "), f"{method} {path}: allow {body.get('allow')}")


@check("HEAD answers wherever GET does, without a body")
def head():
    for path, item in DOC["paths"].items():
        if "get" in item:
            response = client.head(concrete(path))
            expect(response.status_code == 200, f"HEAD {path}: {response.status_code}")
            expect(response.content == b"", f"HEAD {path} has a body")


@check("methods the service does not know (TRACE, QUERY, PROPFIND) are 501 not-implemented on every path")
def unknown_methods():
    for path in list(DOC["paths"]) + ["/no-such-route"]:
        for method in ["TRACE", "QUERY", "PROPFIND"]:
            expect_error(client.request(method, concrete(path)), 501, "not-implemented")


@check("a path that is no route is 404 not-found")
def no_route():
    for path in ["/", "/v1", "/v1/nope", "/v1/accounts/alice%40contoso.com", "/healthz/x"]:
        expect_error(client.get(path), 404, "not-found")


@check("a body in a content coding is 415 on every operation")
def content_coding():
    for path, item in DOC["paths"].items():
        for method in item:
            headers = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}
            response = client.request(method.upper(), concrete(path), headers=headers, content=b"\x1f\x8b")
            expect_error(response, 415, "unsupported-content-encoding", (method, path))
            expect(response.headers.get("accept-encoding") == "identity", "Accept-Encoding")


@check("an Expect other than 100-continue is 417 on every operation")
def expectation():
    for path, item in DOC["paths"].items():
        for method in item:
            status, headers, body = raw_exchange(
                f"{method.upper()} {concrete(path)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nExpect: a-miracle\r\n"
                f"Content-Length: 0\r\n\r\n".encode())
            expect(status == 417 and "417" in item[method]["responses"], f"{method.upper()} {path}: {status}")
            expect(ERROR.is_valid(json.loads(body)) and json.loads(body)["code"] == "expectation-failed", f"body {body[:200]!r}")


@check("header fields over 16 KiB, or over 100 fields, are 431 on every operation")
def big_headers():
    for path, item in DOC["paths"].items():
        for method in item:
            for extra in ["X-Big: " + "a" * 17000 + "\r\n", "".join(f"X-F{i}: v\r\n" for i in range(101))]:
                status, _, body = raw_exchange(f"{method.upper()} {concrete(path)} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n".encode())
                expect(status == 431 and "431" in item[method]["responses"], f"{method.upper()} {path}: {status}")
                expect(ERROR.is_valid(json.loads(body)) and json.loads(body)["code"] == "headers-too-large", f"body {body[:200]!r}")


@check("a body over the limit is 413 too-large: refused up front with Expect: 100-continue, and on receive when sent")
def too_large():
    for path, item in DOC["paths"].items():
        for method in item:
            status, _, body = raw_exchange(
                f"{method.upper()} {concrete(path)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Expect: 100-continue\r\nContent-Length: {64 << 20}\r\n\r\n".encode())
            expect(status == 413 and "413" in item[method]["responses"], f"{method.upper()} {path}: {status}")
            expect(ERROR.is_valid(json.loads(body)) and json.loads(body)["code"] == "too-large", f"body {body[:200]!r}")
    response = client.post("/v1/decisions/receive", content=b"\0" * ((16 << 20) + 1), headers={"Content-Type": "application/octet-stream"})
    expect_error(response, 413, "too-large", ("post", "/v1/decisions/receive"))


@check("a body that does not arrive within the body deadline is 408 body-timeout")
def body_timeout():
    for method, path in [("post", "/v1/decisions"), ("post", "/v1/decisions/receive"), ("put", "/v1/bundle"), ("post", "/v1/protect")]:
        target = path + ("?owner=alice%40contoso.com" if path == "/v1/protect" else "")
        status, headers, body = raw_exchange(
            f"{method.upper()} {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n{{".encode(),
            wait=BODY_TIMEOUT + 10)
        expect(status == 408 and "408" in DOC["paths"][path][method]["responses"], f"{method.upper()} {path}: {status}")
        expect(ERROR.is_valid(json.loads(body)) and json.loads(body)["code"] == "body-timeout", f"body {body[:200]!r}")
        expect(headers.get("connection", "").lower() == "close", f"Connection {headers.get('connection')!r}")


@check("the largest EventId (9223372036854775807) as lastEventId is a client from the future too, and the service lives on")
def largest_event_id():
    # Last of all: a service that dies here takes every later check with it.
    stream = Stream(params={"lastEventId": "9223372036854775807"})
    try:
        expect(stream.status == 200, f"status {stream.status}; frames {stream.frames}")
        stream.wait_for("reset")
        stream.wait_for("ready")
        check_frames(stream.events())
    finally:
        stream.close()
    alive = None
    try:
        alive = httpx.get(f"{BASE}/healthz", timeout=5).status_code
    except httpx.HTTPError as error:
        alive = repr(error)
    expect(alive == 200, f"the service no longer answers /healthz ({alive}): it crashed on a resume point the document allows")


client.close()
sys.exit(1 if failures else 0)
