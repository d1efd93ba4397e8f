"""The answers of a service that knows no platform (started without --platform) for the example
bundle, which holds iOS and Android policies, checked against docs/openapi.json: an account's
policy is an array of one report per platform (the second form of the document's `oneOf`), and
what needs one platform is a 400 `platform-required`.

Run by scripts/contract/run.sh: `python platformless_checks.py BASE_URL TOKEN_FILE DOCUMENT`.
Prints one `PASS name` or `FAIL name: why` line per check; exits 1 when any failed.
"""

import json
import sys

import httpx
import jsonschema_rs

BASE, TOKEN_FILE, DOCUMENT = sys.argv[1:4]
DOC = json.load(open(DOCUMENT))
client = httpx.Client(base_url=BASE, headers={"Authorization": f"Bearer {open(TOKEN_FILE).read().split()[-1]}"}, timeout=10)
failures = 0


def schema_of(path, method, status):
    response = DOC["paths"][path][method]["responses"][status]
    if "$ref" in response:
        response = DOC["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    return jsonschema_rs.Draft202012Validator({**response["content"]["application/json"]["schema"], "components": DOC["components"]})


def run(name, method, path, url, status, check=None, **kwargs):
    global failures
    try:
        response = client.request(method.upper(), url, **kwargs)
        assert response.status_code == status, f"status {response.status_code}, wanted {status}: {response.content[:200]!r}"
        body = response.json()
        errors = [str(e) for e in schema_of(path, method, str(status)).iter_errors(body)]
        assert not errors, f"not as the document says: {errors[:3]}"
        if check:
            check(body)
        print(f"PASS platformless: {name}", flush=True)
    except Exception as error:
        failures += 1
        print(f"FAIL platformless: {name}: {type(error).__name__}: {error}", flush=True)


def per_platform(body):
    assert isinstance(body, list), "one report, not one per platform"
    assert sorted(report["context"]["platform"] for report in body) == ["android", "ios"], "not one report per platform"


def platform_required(body):
    assert body["code"] == "platform-required", f"code {body['code']!r}"


run("GET an account's policy with no platform known: one report per platform", "get", "/v1/accounts/{account}/policy",
    "/v1/accounts/alice%40contoso.com/policy", 200, per_platform)
run("GET an account's policy with ?platform=android: one report", "get", "/v1/accounts/{account}/policy",
    "/v1/accounts/alice%40contoso.com/policy?platform=android", 200, lambda body: isinstance(body, dict) or 1 / 0)
run("GET an account's configuration with no platform known: 400 platform-required", "get", "/v1/accounts/{account}/configuration",
    "/v1/accounts/alice%40contoso.com/configuration", 400, platform_required)
run("POST a decision with no platform known: 400 platform-required", "post", "/v1/decisions", "/v1/decisions", 400,
    platform_required, json={"action": "print", "account": "alice@contoso.com"})
client.close()
sys.exit(1 if failures else 0)
