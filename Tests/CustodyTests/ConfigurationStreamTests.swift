import Custody
import CustodyPolicy
import Testing

@Suite("Typed app configuration streams", .timeLimit(.minutes(1)))
struct ConfigurationStreamTests {
    struct Settings: Decodable, Sendable, Equatable {
        struct Server: Decodable, Sendable, Equatable {
            var host: String
            var port: Int
        }
        var server: Server
        var welcome: String?
    }

    let a0 = TestBundle.account("A", 0)
    let b0 = TestBundle.account("B", 0)

    func bundle(_ settings: [(name: String, value: String)]?) throws -> PolicyBundle {
        try TestBundle(configurationA: settings).bundle()
    }

    @Test(
        "nil while unmanaged, then each configuration, nil again when removed; an undecodable one is nil and an event naming the setting"
    )
    func lifecycle() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        var values = manager.configurations(Settings.self, for: .account(a0)).makeAsyncIterator()
        var events = manager.events().makeAsyncIterator()
        #expect(await values.next() == .some(nil), "unmanaged: no bundle yet")

        await manager.apply(try bundle([("server.host", "api.contoso.com"), ("server.port", "443")]), source: "test")
        #expect(await values.next() == Settings(server: .init(host: "api.contoso.com", port: 443)))

        await manager.apply(
            try bundle([("server.host", "api.contoso.com"), ("server.port", "8443"), ("welcome", "Hi")]), source: "test"
        )
        #expect(await values.next() == Settings(server: .init(host: "api.contoso.com", port: 8443), welcome: "Hi"))

        await manager.apply(
            try bundle([("server.host", "api.contoso.com"), ("server.port", "eighty")]), source: "test")
        #expect(await values.next() == .some(nil), "undecodable")

        await manager.apply(try bundle([("server.host", "new.contoso.com"), ("server.port", "443")]), source: "test")
        #expect(await values.next() == Settings(server: .init(host: "new.contoso.com", port: 443)))

        await manager.apply(try bundle(nil), source: "test")
        #expect(await values.next() == .some(nil), "removed")

        // The events, in order: the configuration changes for the group A accounts, and the
        // decoding failure naming server.port.
        var failures: [PolicyEvent] = []
        var changedForA0 = 0
        while changedForA0 < 5, let event = await events.next() {
            switch event {
            case .appConfigurationChanged(let account) where account == a0: changedForA0 += 1
            case .configurationDecodingFailed: failures.append(event)
            default: break
            }
        }
        guard case .configurationDecodingFailed(let account, let type, let error)? = failures.first else {
            Issue.record("no configurationDecodingFailed event")
            return
        }
        #expect(account == a0)
        #expect(type.hasSuffix("Settings"))
        #expect(error.keyPath == "server.port")
        #expect(error.code == .typeMismatch)
    }

    @Test("only accounts whose configuration changes are told; the lookup follows the account in effect")
    func scoping() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(try bundle([("k", "1")]), source: "test")
        let events = await manager.apply(try bundle([("k", "2")]), source: "test")
        #expect(events == (0..<3).map { .appConfigurationChanged(account: TestBundle.account("A", $0)) })
        #expect(await manager.apply(try bundle([("k", "2")]), source: "test").isEmpty)

        #expect(withAccount(a0) { manager.appConfiguration()?.integer("k") } == 2)
        #expect(withAccount(b0) { manager.appConfiguration()?.isEmpty } == true)
        #expect(withAccount(nil) { manager.appConfiguration() } == nil)
        #expect(manager.appConfiguration(for: .account(a0))?.string("k") == "2")
    }
}
