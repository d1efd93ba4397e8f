"""Every example of the README's "The decision service" section, done through a client that
openapi-python-client generated from docs/openapi.json, and through nothing else: if the
document is wrong about a route, its parameters, its body or its answer, an example fails here.

Run by scripts/contract/run.sh: `python readme_examples.py BASE_URL TOKEN_FILE`. Prints one
`PASS name` or `FAIL name: why` line per example; exits 1 when any failed.

The server is the example bundle (policies/) served for iOS, as `make serve` runs it.
"""

import io
import json
import sys
import traceback

# The generated client, and only it, talks to the service.
from custody_decision_service_client import AuthenticatedClient
from custody_decision_service_client.api.default import (
    account_configuration,
    account_policy,
    bundle,
    decide,
    decide_batch,
    protect,
    unprotect,
)
from custody_decision_service_client.models import (
    Bundle,
    ConfigurationReport,
    Decision,
    Platform,
    PolicyReport,
    QuerySaveTo,
)
from custody_decision_service_client.models.query_save_to_location import QuerySaveToLocation
from custody_decision_service_client.types import UNSET, File

ALICE = "alice@contoso.com"


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def status(response, wanted):
    expect(response.status_code == wanted, f"status {int(response.status_code)}, wanted {wanted}: {response.content[:300]!r}")


def bundle_in_force(client):
    """GET /v1/bundle: the revision in force, its ETag, its files."""
    response = bundle.sync_detailed(client=client)
    status(response, 200)
    parsed = response.parsed
    expect(isinstance(parsed, Bundle), f"not parsed as a Bundle: {type(parsed).__name__}")
    expect(len(parsed.revision) == 64, f"revision {parsed.revision!r}")
    expect(response.headers.get("etag") == f'"{parsed.revision}"', f"ETag {response.headers.get('etag')!r}")
    expect(response.headers.get("custody-revision") == parsed.revision, "Custody-Revision is not the revision")
    names = {file.name for file in parsed.files}
    expect({"tenant.json", "finance-ios.json", "all-staff.json"} <= names, f"files {sorted(names)}")
    expect(parsed.source.endswith("policies"), f"source {parsed.source!r}")
    return parsed.revision


def one_decision(client, revision):
    """POST /v1/decisions?platform=ios {"action":"saveTo","owner":"alice@contoso.com","location":"dropbox"}"""
    query = QuerySaveTo(action="saveTo", owner=ALICE, location=QuerySaveToLocation.DROPBOX)
    response = decide.sync_detailed(client=client, body=query, platform=Platform.IOS)
    status(response, 200)
    answer = response.parsed
    expect(isinstance(answer, Decision), f"not parsed as a Decision: {type(answer).__name__}")
    expect(answer.action.value == "saveTo", f"action {answer.action!r}")
    expect(answer.allowed is False, "alice may save to Dropbox, the README says she may not")
    expect(answer.setting == "saveAsBlocked", f"setting {answer.setting!r}")
    expect(answer.policies == ["Contoso Finance (iOS)"], f"policies {answer.policies!r}")
    expect("dropbox" in answer.reason, f"reason {answer.reason!r}")
    expect(answer.revision == revision, f"decided at {answer.revision}, the bundle in force is {revision}")
    expect(isinstance(answer.event_id, int) and answer.event_id >= 0, f"eventId {answer.event_id!r}")
    expect(response.headers.get("custody-revision") == revision, "Custody-Revision header")
    expect(response.headers.get("custody-event-id") == str(answer.event_id), "Custody-Event-Id header")


def a_batch(client, revision):
    """printf '%s\\n' '{"action":"print",...alice}' '{"action":"print",...bob}' | POST /v1/decisions/batch?platform=ios"""
    lines = b'{"action":"print","account":"alice@contoso.com"}\n{"action":"print","account":"bob@contoso.com"}\n'
    # The generator does not parse application/x-ndjson answers (it says so when it generates):
    # the client hands back the raw lines, as for any status its document does not type, so
    # this call is made with a client that does not raise on them.
    raw = AuthenticatedClient(base_url=client._base_url, token=client.token, raise_on_unexpected_status=False)
    with raw:
        response = decide_batch.sync_detailed(client=raw, body=File(payload=io.BytesIO(lines)), platform=Platform.IOS)
    status(response, 200)
    expect(response.headers.get("content-type", "").startswith("application/x-ndjson"), f"Content-Type {response.headers.get('content-type')!r}")
    expect(response.headers.get("custody-revision") == revision, "Custody-Revision header")
    answers = [json.loads(line) for line in response.content.decode().splitlines()]
    expect(len(answers) == 2, f"{len(answers)} answers for 2 queries")
    alice, bob = answers
    expect(alice["action"] == "print" and alice["allowed"] is False, f"alice: {alice}")
    expect(alice["policies"] == ["Contoso Finance (iOS)"], f"alice: {alice}")
    expect(bob["action"] == "print" and bob["allowed"] is True, f"bob: {bob}")
    expect(bob["policies"] == ["Contoso All Staff (iOS)"], f"bob: {bob}")


def policy_by_upn(client, revision):
    """GET /v1/accounts/alice%40contoso.com/policy"""
    response = account_policy.sync_detailed(ALICE, client=client, custody_min_revision=revision or UNSET)
    status(response, 200)
    report = response.parsed
    expect(isinstance(report, PolicyReport), f"not parsed as one PolicyReport: {type(report).__name__}")
    expect(report.account.upn == ALICE, f"account {report.account.upn!r}")
    expect(report.account.in_tenant is True and report.managed is True, "alice is not a managed tenant account")
    expect(report.context.platform == Platform.IOS, f"platform {report.context.platform!r}")
    names = [policy.name for policy in report.policies]
    expect("Contoso Finance (iOS)" in names, f"policies {names}")
    settings = report.settings.additional_properties
    expect("saveAsBlocked" in settings and settings["saveAsBlocked"].value is True, "saveAsBlocked is not true")
    expect("Contoso Finance (iOS)" in settings["printBlocked"].sources, "printBlocked's sources")


def configuration_by_upn(client, revision):
    """GET /v1/accounts/alice%40contoso.com/configuration"""
    response = account_configuration.sync_detailed(ALICE, client=client, app="com.microsoft.office.outlook")
    status(response, 200)
    report = response.parsed
    expect(isinstance(report, ConfigurationReport), f"not parsed as a ConfigurationReport: {type(report).__name__}")
    keys = report.keys.additional_properties
    expect("com.contoso.outlook.SignatureLines" in keys, f"keys {sorted(keys)}")
    signature = keys["com.contoso.outlook.SignatureLines"]
    expect(sorted(signature.values) == ["2", "4"] and signature.conflict is True, f"SignatureLines {signature.to_dict()}")
    names = [policy.display_name for policy in report.policies]
    expect(names == ["Outlook: all staff", "Outlook: finance"], f"policies {names}")


def protect_then_unprotect(client, revision):
    """echo secret | POST /v1/protect?owner=alice@contoso.com > env.bin; POST /v1/unprotect < env.bin"""
    plaintext = b"secret\n"
    sealed = protect.sync_detailed(client=client, body=File(payload=io.BytesIO(plaintext)), owner=ALICE)
    status(sealed, 200)
    envelope = sealed.content
    expect(plaintext not in envelope, "the envelope holds the plaintext")
    expect(sealed.headers.get("custody-encrypted") == "true", f"Custody-Encrypted {sealed.headers.get('custody-encrypted')!r}")
    owner = sealed.headers.get("custody-owner")
    expect(owner == "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", f"Custody-Owner {owner!r}")
    expect(isinstance(sealed.parsed, File), f"the envelope is not parsed as a File: {type(sealed.parsed).__name__}")
    expect(sealed.parsed.payload.read() == envelope, "the parsed File is not the envelope")
    opened = unprotect.sync_detailed(client=client, body=File(payload=io.BytesIO(envelope)))
    status(opened, 200)
    expect(opened.content == plaintext, f"unprotect gave {opened.content[:64]!r}, not {plaintext!r}")
    expect(opened.headers.get("custody-owner") == owner, "Custody-Owner of the plaintext")


def main():
    base_url, token_file = sys.argv[1], sys.argv[2]
    token = open(token_file).read().split()[-1]
    client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)
    failed = 0
    revision = None
    examples = [
        ("GET /v1/bundle", bundle_in_force),
        ("POST /v1/decisions (one decision)", one_decision),
        ("POST /v1/decisions/batch (two queries)", a_batch),
        ("GET /v1/accounts/alice%40contoso.com/policy", policy_by_upn),
        ("GET /v1/accounts/alice%40contoso.com/configuration", configuration_by_upn),
        ("POST /v1/protect then /v1/unprotect (bytes round-trip)", protect_then_unprotect),
    ]
    with client:
        for name, example in examples:
            try:
                result = example(client) if example is bundle_in_force else example(client, revision)
                if example is bundle_in_force:
                    revision = result
                print(f"PASS readme: {name}", flush=True)
            except Exception as error:  # every failure is reported, then the next example runs
                failed += 1
                detail = str(error) or traceback.format_exc(limit=3)
                print(f"FAIL readme: {name}: {type(error).__name__}: {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
