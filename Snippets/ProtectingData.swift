// Seals a buffer and a file for alice with the protection library alone: the policy decides
// whether to encrypt, the protector seals as told, and wiping alice's keys makes her data
// unreadable.

// snippet.hide
import Foundation
import CustodyPolicy

// What the example before this one made: the policy and alice; and a file of hers.
let snapshot = PolicySnapshot(
    bundle: try PolicyBundle.load(path: "policies"),
    context: EvaluationContext(platform: .ios, appID: "com.microsoft.office.outlook"))
let alice = AccountID("alice@contoso.com")!
try Data("a report".utf8).write(to: URL(fileURLWithPath: "report.pdf"))
// snippet.show
import CustodyProtection
import CustodyStore

let database = try CustodyDatabase(path: ".custody/state.sqlite")
let keyRing = try await KeyRing(store: StateKeyStore(state: database), masterKey: .keyFile(path: "master.key"))
let protector = DataProtector(keyRing: keyRing)

let data = Array("Q3 numbers".utf8)
let owner = snapshot.tenantAccount(for: alice)!.id  // the tenant's form: one key for every form
let encrypt = snapshot.encryptionRequired(account: owner).isAllowed  // the policy decides, the protector seals
let envelope = try await protector.protect(data, owner: owner, encrypt: encrypt)
let plaintext = try await protector.unprotect(envelope)  // ProtectionError(.decryptFailed) if it was changed
assert(plaintext == data)
// Atomic; memory does not grow with the file.
try await protector.protect(file: "report.pdf", owner: owner, encrypt: encrypt)
try await keyRing.wipe(protector.ownerIdentifier(for: owner))  // crypto-shred alice's data
