// Loads the example bundle in `policies/`, resolves it for Outlook on iOS, and asks whether
// alice's data may be saved to Box, with the reason and the policies that decided it.

import CustodyPolicy

let bundle = try PolicyBundle.load(path: "policies")  // throws BundleError with located diagnostics
let snapshot = PolicySnapshot(
    bundle: bundle, context: EvaluationContext(platform: .ios, appID: "com.microsoft.office.outlook"))

let alice = AccountID("alice@contoso.com")!
let decision = snapshot.saveTo(owner: alice, location: .box, locationAccount: alice)
print(decision.isAllowed)  // false
print(decision.reason)  // "saveAsBlocked is true and box is not in allowedDataStorageLocations [...] (from ...)"
print(decision.settingName ?? "none")  // "allowedDataStorageLocations"

print(snapshot.effectivePolicy(for: alice)?.saveAsBlocked.sources ?? [])  // the policies the value came from
