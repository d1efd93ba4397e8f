#!/usr/bin/env python3
"""A Graph-shaped tenant served on loopback, for scripts/bench-graph.sh.

USERS users in GROUPS groups (each user in two groups, so each group has 2*USERS/GROUPS
members), POLICIES app protection policies (half iOS, half Android) each including three groups
and excluding one, built from policies/finance-ios.json. Graph's page sizes: 999 members a page
by $skiptoken cursor, policies with $expand=apps,assignments; /users lists every user with an
Intune service plan (999 a page); /groups/delta and /users/delta answer every round with no change. Any client secret is accepted.
Prints the port on its first line and its process id on the second; counts requests at GET /_stats.
"""
import json, os, sys, threading, copy
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from urllib.parse import urlsplit, parse_qs, urlencode

USERS, GROUPS, POLICIES = (int(a) for a in sys.argv[1:4])
ROOT = sys.argv[4]
PAGE = 999
template = json.load(open(f"{ROOT}/policies/finance-ios.json"))

def user(i):
    return {"id": f"{i:08x}-0000-4000-8000-000000000000", "userPrincipalName": f"user{i}@contoso.com"}

per_group = 2 * USERS // GROUPS
def members(g):
    start = (g * USERS // GROUPS)
    return [user((start + k) % USERS) for k in range(per_group)]

def policy(p):
    body = copy.deepcopy(template)
    body.pop("@odata.context", None)
    platform = "ios" if p % 2 == 0 else "android"
    body["@odata.type"] = f"#microsoft.graph.{platform}ManagedAppProtection"
    body["id"] = f"T_{p:04d}"
    body["displayName"] = f"Policy {p}"
    groups = [(p * 4 + k) % GROUPS for k in range(4)]
    body["assignments"] = [
        {"id": f"a{p}-{k}", "target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": f"grp-{g:04d}"}}
        for k, g in enumerate(groups[:3])
    ] + [{"id": f"a{p}-x", "target": {"@odata.type": "#microsoft.graph.exclusionGroupAssignmentTarget", "groupId": f"grp-{groups[3]:04d}"}}]
    if platform == "android":
        body["apps"] = [{"id": "com.microsoft.office.outlook.android", "mobileAppIdentifier": {"@odata.type": "#microsoft.graph.androidMobileAppIdentifier", "packageId": "com.microsoft.office.outlook"}}]
    return body

policies = [policy(p) for p in range(POLICIES)]
lock = threading.Lock()
stats = {"requests": 0}

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass

    def send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send(200, {"token_type": "Bearer", "expires_in": 3600, "access_token": "bench-token"})

    def do_GET(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path == "/_stats":
            return self.send(200, stats)
        with lock:
            stats["requests"] += 1
        segments = parts.path.strip("/").split("/")[1:]
        if segments[:1] == ["deviceAppManagement"] and len(segments) == 2:
            kind = segments[1]
            if kind == "managedAppPolicies":
                items = policies
            else:
                items = [p for p in policies if p["@odata.type"].endswith(kind[:-1])]
            return self.send(200, {"value": items})
        if segments in (["groups", "delta"], ["users", "delta"]):
            # The tenant never changes: every round is empty, with a link for now.
            rest = {k: v[0] for k, v in query.items() if k != "$deltatoken"}
            rest["$deltatoken"] = "1"
            link = f"http://127.0.0.1:{self.server.server_port}{parts.path}?{urlencode(rest)}"
            return self.send(200, {"value": [], "@odata.deltaLink": link})
        if segments == ["users"] or (segments[:1] == ["groups"] and len(segments) in (3, 4)):
            if segments == ["users"]:
                plans = [{"service": "SCO", "capabilityStatus": "Enabled"}]
                items = [dict(user(i), accountEnabled=True, assignedPlans=plans) for i in range(USERS)]
            else:
                items = members(int(segments[1].split("-")[1]))
            start = int(query.get("$skiptoken", ["0"])[0])
            page = items[start:start + PAGE]
            body = {"value": page}
            if start + PAGE < len(items):
                rest = {k: v[0] for k, v in query.items() if k != "$skiptoken"}
                rest["$skiptoken"] = str(start + PAGE)
                body["@odata.nextLink"] = f"http://127.0.0.1:{self.server.server_port}{parts.path}?{urlencode(rest)}"
            return self.send(200, body)
        self.send(404, {"error": {"code": "ResourceNotFound", "message": self.path}})

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_port, flush=True)
print(os.getpid(), flush=True)  # the process to stop (an interpreter shim may stand between)
server.serve_forever()
