import CustodyPolicy
import Testing

@Suite("Account identities")
struct AccountIDTests {
    @Test(
        "classifies one identifier as an OID (a GUID) or a UPN",
        arguments: [
            ("alice@contoso.com", nil, "alice@contoso.com"),
            ("  alice@contoso.com  ", nil, "alice@contoso.com"),
            // Only ASCII spaces are trimmed (issue 47): other spaces stay part of the form,
            // which then names no account called alice@contoso.com.
            ("\u{A0}alice@contoso.com", nil, "\u{A0}alice@contoso.com"),
            ("alice@contoso.com\u{3000}", nil, "alice@contoso.com\u{3000}"),
            ("A1F0C7D2-5B1E-4C3A-9E8F-000000000001", "A1F0C7D2-5B1E-4C3A-9E8F-000000000001", nil),
            ("{a1f0c7d2-5b1e-4c3a-9e8f-000000000001}", "a1f0c7d2-5b1e-4c3a-9e8f-000000000001", nil),
            ("a1f0c7d2-5b1e-4c3a-9e8f-00000000000", nil, "a1f0c7d2-5b1e-4c3a-9e8f-00000000000"),
            ("oid-without-guid-form", nil, "oid-without-guid-form"),
        ] as [(String, String?, String?)])
    func classifies(identifier: String, oid: String?, upn: String?) throws {
        let account = try #require(AccountID(identifier))
        #expect(account.oid == oid)
        #expect(account.upn == upn)
    }

    @Test(
        "refuses identifiers that are too long or hold control characters, saying why",
        arguments: [
            (String(repeating: "a", count: 1_021), InvalidAccountID.Reason.tooLong(1_021)),
            (String(repeating: "a", count: 1_008) + "@contoso.com" + "x", .tooLong(1_021)),
            // Folding İ (2 bytes) gives i̇ (3 bytes): the limit holds for the folded form too.
            (String(repeating: "İ", count: 500) + "@c.com", .tooLong(1_506)),
            ("al\u{1B}[2Jice@contoso.com", .controlCharacter("\u{1B}", offset: 2)),
            ("alice@contoso.com\u{0}x", .controlCharacter("\u{0}", offset: 17)),
            ("a\rb@contoso.com", .controlCharacter("\r", offset: 1)),
            ("a\u{7F}@contoso.com", .controlCharacter("\u{7F}", offset: 1)),
            ("a\u{85}@contoso.com", .controlCharacter("\u{85}", offset: 1)),
            ("moc.osotnoc@\u{202E}alice", .controlCharacter("\u{202E}", offset: 12)),
            ("a\u{2066}b@contoso.com", .controlCharacter("\u{2066}", offset: 1)),
            ("a\u{2028}b@contoso.com", .controlCharacter("\u{2028}", offset: 1)),
            ("   ", .blank),
            // Around the identifier too: not trimmed away, refused (issue 47).
            ("\talice@contoso.com", .controlCharacter("\t", offset: 0)),
            ("alice@contoso.com\u{85}", .controlCharacter("\u{85}", offset: 17)),
            ("\u{2028}alice@contoso.com", .controlCharacter("\u{2028}", offset: 0)),
            ("alice@contoso.com\u{2029}", .controlCharacter("\u{2029}", offset: 17)),
            (" \u{202E}alice@contoso.com", .controlCharacter("\u{202E}", offset: 0)),
        ] as [(String, InvalidAccountID.Reason)])
    func invalid(identifier: String, reason: InvalidAccountID.Reason) {
        #expect(AccountID(identifier) == nil)
        #expect(AccountID(upn: identifier) == nil)
        #expect(throws: InvalidAccountID.self) { try AccountID(validating: identifier) }
        do {
            _ = try AccountID(validating: identifier)
        } catch {
            #expect(error.reason == reason)
            #expect(!error.description.isEmpty)
        }
    }

    @Test("accepts the longest identifier and non-ASCII letters")
    func longestAndUnicode() throws {
        #expect(AccountID(String(repeating: "a", count: 1_008) + "@contoso.com") != nil)
        #expect(AccountID("élodie@contoso.com")?.upn == "élodie@contoso.com")
        #expect(AccountID("山田@contoso.jp") != nil)
    }

    @Test(
        "escapes control characters in text printed from input, and nothing else",
        arguments: [
            ("alice@contoso.com", "alice@contoso.com"),
            ("élodie — ok", "élodie — ok"),
            ("a\u{1B}[2Jb", "a\\u{1B}[2Jb"),
            ("line\nforged", "line\\u{A}forged"),
            ("tab\there", "tab\\u{9}here"),
            ("\u{202E}txt.exe", "\\u{202E}txt.exe"),
            ("c1\u{9B}31m", "c1\\u{9B}31m"),
        ])
    func escaping(text: String, printed: String) {
        #expect(text.escapingControlCharacters == printed)
    }

    @Test("refuses blank identities")
    func blank() {
        #expect(AccountID("") == nil)
        #expect(AccountID("   ") == nil)
        #expect(AccountID(oid: nil, upn: nil) == nil)
        #expect(AccountID(oid: " ", upn: "") == nil)
    }

    @Test(
        "compares case-insensitively, keeping the forms as given",
        arguments: [
            ("Alice@Contoso.COM", "alice@contoso.com", true),
            ("ÉLODIE@contoso.com", "élodie@contoso.com", true),
            ("alice@contoso.com", "alice@fabrikam.com", false),
            ("A1F0C7D2-5B1E-4C3A-9E8F-000000000001", "a1f0c7d2-5b1e-4c3a-9e8f-000000000001", true),
        ])
    func caseInsensitive(first: String, second: String, equal: Bool) {
        #expect((id(first) == id(second)) == equal)
        #expect(id(first).isSameAccount(as: id(second)) == equal)
        if equal { #expect(id(first).hashValue == id(second).hashValue) }
        #expect(id(first).description == first.trimmingCharacters())
    }

    @Test(
        "without a tenant, OIDs decide when both have one, else UPNs; an OID never matches a UPN",
        arguments: [
            (AccountID(oid: "o1", upn: "a@x.com")!, AccountID(oid: "O1", upn: "b@x.com")!, true),
            (AccountID(oid: "o1", upn: "a@x.com")!, AccountID(oid: "o2", upn: "a@x.com")!, false),
            (AccountID(oid: "o1", upn: "a@x.com")!, AccountID(upn: "A@X.com")!, true),
            (AccountID(oid: "o1")!, AccountID(upn: "a@x.com")!, false),
            (AccountID(upn: "a@x.com")!, AccountID(upn: "a@x.com")!, true),
        ])
    func sameWithoutTenant(first: AccountID, second: AccountID, same: Bool) {
        #expect(first.isSameAccount(as: second) == same)
        #expect(second.isSameAccount(as: first) == same)
    }

    @Test("a tenant links an OID and a UPN of the same account, in both directions")
    func tenantLinks() {
        let snapshot = World.snapshot(owner: ProtectionSettings())
        #expect(snapshot.isSameAccount(World.owner, World.ownerByOID))
        #expect(snapshot.isSameAccount(World.ownerByOID, id("OWNER@contoso.com")))
        #expect(!snapshot.isSameAccount(World.owner, World.peer))
        #expect(!snapshot.isSameAccount(World.owner, nil))
        #expect(!snapshot.isSameAccount(nil, nil))
        // An OID the tenant does not know with the UPN of an account whose OID it does know: a
        // reassigned or mistyped UPN, not the same person.
        let impostor = AccountID(oid: "0b000000-0000-4000-8000-000000000009", upn: "owner@contoso.com")!
        #expect(snapshot.tenantAccount(for: impostor) == nil)
        #expect(!snapshot.isSameAccount(impostor, World.owner))
        // Outside the tenant, ids still compare by their own forms.
        #expect(snapshot.isSameAccount(World.outsider, id("OUTSIDER@fabrikam.com")))
    }

    @Test("an OID not in GUID form still resolves through the other index")
    func nonGUIDOID() {
        let tenant = Tenant(accounts: [
            TenantAccount(id: AccountID(oid: "oid-7", upn: "seven@contoso.com")!, groups: [])
        ])
        let snapshot = PolicySnapshot(bundle: PolicyBundle(tenant: tenant))
        #expect(snapshot.tenantAccount(for: id("oid-7"))?.id.upn == "seven@contoso.com")
        #expect(snapshot.isSameAccount(id("OID-7"), id("seven@contoso.com")))
    }
}

extension String {
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
