"""Decisions per second of two other policy engines, through their public Python bindings, on
the save-to queries `custody decide` is measured on (scripts/bench-peers.sh runs this).

    bench_peers.py BUNDLE QUERIES CEDAR_COUNT REGO_COUNT

BUNDLE is a custody-benchgen bundle (tenant.json, policies.json), QUERIES a JSON Lines file of
save-to queries. Cedar decides the first CEDAR_COUNT queries in batches of 1,000; rego-cpp the
first REGO_COUNT, one at a time against a compiled bundle (its rate on this data is about 30 a
second: each evaluation walks the 20,000-entry data document, so a large count takes hours).
One tab-separated line a figure: engine, queries, wall seconds, CPU seconds, decisions per
second (by wall time).

The engines are given the work already prepared, which favours them: each account's effective
save-to rule (blocked or not, and the locations allowed) is worked out here, once, from the
groups and the policies' include and exclude assignments (blocked when any applicable iOS
policy sets saveAsBlocked; the locations allowed are those every such policy lists), and the
engine decides from that: one look-up and one membership test a query. Custody resolves the
same from the tenant itself and decides the whole contract (the location's account, the
default policy, reasons). The answers are not compared: the rules are not the same.
"""

import json
import sys
import time


def effective_rules(bundle):
    with open(f"{bundle}/tenant.json") as file:
        tenant = json.load(file)
    with open(f"{bundle}/policies.json") as file:
        policies = [
            p for p in json.load(file)["value"] if p["@odata.type"] == "#microsoft.graph.iosManagedAppProtection"
        ]
    for policy in policies:
        targets = [a["target"] for a in policy.get("assignments", [])]
        policy["include"] = {t["groupId"] for t in targets if t["@odata.type"].endswith(".groupAssignmentTarget")}
        policy["exclude"] = {t["groupId"] for t in targets if t["@odata.type"].endswith("exclusionGroupAssignmentTarget")}
    rules = {}
    for account in tenant["accounts"]:
        groups = set(account["groups"])
        blocking = [
            set(p["allowedDataStorageLocations"])
            for p in policies
            if groups & p["include"] and not groups & p["exclude"] and p["saveAsBlocked"]
        ]
        rule = {"blocked": bool(blocking), "allowed": sorted(set.intersection(*blocking)) if blocking else []}
        rules[account["upn"]] = rule
        rules[account["oid"]] = rule
    return rules


def timed(name, count, decide):
    wall, cpu = time.perf_counter(), time.process_time()
    decided = decide()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert decided == count, f"{name} decided {decided} of {count}"
    print(f"{name}\t{count}\t{wall:.2f}\t{cpu:.2f}\t{count / wall:.0f}", flush=True)


def cedar(rules, queries):
    import cedarpy

    entities = cedarpy.Entities.from_json_str(
        json.dumps(
            [
                {"uid": {"type": "User", "id": account}, "attrs": rule, "parents": []}
                for account, rule in rules.items()
            ]
        )
    )
    policies = cedarpy.PolicySet.from_str(
        'permit (principal, action == Action::"saveTo", resource) unless '
        "{ principal has blocked && principal.blocked && !principal.allowed.contains(context.location) };"
    )

    def decide():
        decided = 0
        for start in range(0, len(queries), 1_000):
            requests = [
                {
                    "principal": {"type": "User", "id": q["owner"]},
                    "action": 'Action::"saveTo"',
                    "resource": 'Location::"any"',
                    "context": {"location": q["location"]},
                }
                for q in queries[start : start + 1_000]
            ]
            for result in cedarpy.is_authorized_batch(requests, policies, entities):
                # An evaluation error is not a decision: counting it would time failures.
                assert result.decision in (cedarpy.Decision.Allow, cedarpy.Decision.Deny), result
                assert not result.diagnostics.errors, result.diagnostics.errors
                decided += 1
        return decided

    timed("Cedar (cedarpy, prepared policy set and entities, batches of 1,000)", len(queries), decide)


REGO = """
package custody

default allow := false

allow if not data.rules[input.owner]

allow if not data.rules[input.owner].blocked

allow if input.location in data.rules[input.owner].allowed
"""


def rego_cpp(rules, queries):
    import regopy

    builder = regopy.Interpreter()
    builder.add_module("custody.rego", REGO)
    builder.add_data_json(json.dumps({"rules": rules}))
    bundle = builder.build("data.custody.allow")
    assert bundle.ok(), bundle
    interpreter = regopy.Interpreter()

    def decide():
        decided = 0
        for start in range(0, len(queries), 1_000):
            for q in queries[start : start + 1_000]:
                interpreter.set_input_term(json.dumps({"owner": q["owner"], "location": q["location"]}))
                output = interpreter.query_bundle(bundle)
                # An error is not a decision: each answer must be true or false.
                # A compiled bundle answers a false `allow` as undefined (its default is not
                # applied there, as rego-cpp 1.5.2 runs it): undefined is the block.
                text = str(output)
                assert output.ok() and text in ('{"expressions":[true]}', '{"expressions":[false]}', "undefined"), text
                decided += 1
        return decided

    timed("rego-cpp (regopy, a compiled bundle, one input a query)", len(queries), decide)


def main():
    bundle, path, cedar_count, rego_count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rules = effective_rules(bundle)
    with open(path) as file:
        queries = [json.loads(line) for _, line in zip(range(max(cedar_count, rego_count)), file)]
    cedar(rules, queries[:cedar_count])
    rego_cpp(rules, queries[:rego_count])


if __name__ == "__main__":
    main()
