// Opens an installation with its state in `.custody`, makes the example bundle the policy in
// force, protects and opens a buffer for alice as her policy says, and wipes her by OID.

import Custody
import CustodyPolicy
import CustodyProtection

let engine = try await CustodyEngine.open(
    CustodyConfiguration(
        state: .path(".custody"), masterKey: .keyFile(path: "master.key"),
        context: EvaluationContext(platform: .ios, appID: "com.microsoft.office.outlook")))
// Stored as the policy in force; one that does not load throws CustodyError(.bundle), and the old one stays.
try await engine.apply(bundleDirectory: "policies")

let alice = AccountID("alice@contoso.com")!
let data = Array("Q3 numbers".utf8)
// .envelope; .plan.encrypted: what alice's policy requires
let protected = try await engine.protect(data, owner: alice)
let plaintext = try await engine.unprotect(protected.envelope)
assert(plaintext == data)
try await engine.wipe(account: AccountID("a1f0c7d2-5b1e-4c3a-9e8f-000000000001")!)  // by OID or UPN: every alias
