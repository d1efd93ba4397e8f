public import CustodyPolicy
import Logging

extension PolicyManager {
    /// The app configuration that reaches the account in effect (see `account(_:)`): nil when
    /// it is unmanaged, empty when no configuration policy reaches it. Intune's
    /// `IntuneMAMAppConfigManager.appConfig(forIdentity:)`.
    public nonisolated func appConfiguration(for scope: AccountScope? = nil) -> AppConfiguration? {
        snapshot.appConfiguration(for: account(scope))
    }

    /// The account's configuration decoded as `type` now, then again after every change of
    /// it: Apple ManagedApp's `configurations(_:)`.
    ///
    /// The value is nil when the account is unmanaged, has no configuration, or the
    /// configuration does not decode; a decoding failure is also published as
    /// `configurationDecodingFailed` (naming the setting) and logged. Each key decodes from the
    /// value `AppConfiguration`'s `.any` picks. The account is the one in effect when this is
    /// called, unless `scope` names one. The stream finishes when the subscriber stops or the
    /// manager finishes.
    public nonisolated func configurations<Configuration: Decodable & Sendable>(
        _ type: Configuration.Type, for scope: AccountScope? = nil
    ) -> AsyncStream<Configuration?> {
        let account = account(scope)
        let slot = slot
        let hub = hub
        let journal = journal
        let logger = logger
        let typeName = String(reflecting: type)
        // The first event stands for "now": the loop reads the snapshot in force at that moment.
        // With no account (explicitly unmanaged) the value is nil now and forever.
        let events = hub.subscribe { account.map { [.appConfigurationChanged(account: $0)] } ?? [] }
        let (stream, continuation) = AsyncStream.makeStream(of: Configuration?.self)
        if account == nil { continuation.yield(nil) }
        let task = Task {
            for await event in events {
                guard let account, case .appConfigurationChanged(let changed) = event else { continue }
                let snapshot = slot.current.snapshot
                guard changed == account || snapshot.isSameAccount(changed, account) else { continue }
                guard let configuration = snapshot.appConfiguration(for: account), !configuration.isEmpty else {
                    continuation.yield(nil)
                    continue
                }
                do throws(ConfigurationDecodingError) {
                    continuation.yield(try ConfigurationDecoder().decode(type, from: configuration.resolvedValues))
                } catch {
                    logger.error(
                        "app configuration does not decode",
                        metadata: [
                            "type": "\(typeName)", "setting": "\(error.keyPath)", "code": "\(error.code.rawValue)",
                        ])
                    continuation.yield(nil)
                    await journal.publish([.configurationDecodingFailed(account: account, type: typeName, error: error)]
                    )
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
