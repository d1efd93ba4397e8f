// What an app asks the engine about its own accounts: it watches the bundle directory, tells
// each subscriber what changed, decides for the account in effect without awaiting, streams
// typed app configuration, hands out secrets, and wipes an account.

// snippet.hide
import CustodyProtection

// What the example before this one made: an engine with the example bundle in force (here on
// a state in memory, so that this runs alike whatever ran before it), and alice. And an
// app-wide password for the example to read.
let outlook = EvaluationContext(platform: .ios, appID: "com.microsoft.office.outlook")
let key = MasterKeySource.keyFile(path: "master.key")
let engine = try await CustodyEngine.open(CustodyConfiguration(state: .inMemory, masterKey: key, context: outlook))
try await engine.apply(bundleDirectory: "policies")
let alice = AccountID("alice@contoso.com")!
try await engine.secrets().storePassword("correct horse battery staple", identifier: "vpn", for: nil)
// snippet.show
import Custody
import CustodyPolicy

let watch = engine.watch(bundleDirectory: "policies")  // re-apply on every settled edit

Task {
    for await event in engine.events() {  // one stream per subscriber
        if case .dataProtectionChanged(let account, let encryptionRequired) = event {
            print("re-protect the files of \(account): encryption required is now \(encryptionRequired)")
        }
    }
}

let mayUseBox = withAccount(alice) {  // task-scoped identity
    engine.saveTo(.box, locationAccount: alice).isAllowed  // decides for alice, no await
}
print("alice may save to Box: \(mayUseBox)")

struct MailSettings: Decodable, Sendable {
    var signatureLines: Int?
    enum CodingKeys: String, CodingKey { case signatureLines = "com.contoso.outlook.SignatureLines" }
}
Task {
    for await settings in engine.configurations(MailSettings.self, for: .account(alice)) {
        // the current value first (nil: unmanaged, none, or undecodable), then every change
        print("signature lines: \(settings?.signatureLines ?? 0)")
    }
}

let vpn = try await engine.secrets().password(withIdentifier: "vpn")  // the account in effect's, else app-wide
print("the VPN password has \(vpn.count) characters")
try await engine.wipe(account: alice)  // keys, secrets, registered files
watch.cancel()
