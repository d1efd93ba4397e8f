import ArgumentParser
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Logging

/// Where Custody's state (a SQLite database) lives.
struct StateOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Custody's state: a SQLite database file, or a directory holding state.sqlite (created on first use).", valueName: "path"))
    var state: String = ".custody/state.sqlite"

    /// The opened database, or a message and exit 1.
    func database() throws -> CustodyDatabase {
        do {
            return try CustodyDatabase(path: CustodyDatabase.path(forState: state))
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
    }
}

/// Where keys live and where the master key comes from.
struct ProtectionOptions: ParsableArguments {
    @OptionGroup var stateOptions: StateOptions

    @Option(help: ArgumentHelp(
        "The master key file (32 bytes, raw, hex or base64; created with mode 0600 on first use). Default: CUSTODY_MASTER_KEY_FILE, else the passphrase in CUSTODY_PASSPHRASE.",
        valueName: "file"))
    var masterKeyFile: String?

    /// The key ring, or a message and exit 1.
    func keyRing() throws -> KeyRing {
        try stateAndKeyRing().keyRing
    }

    /// The state database and the key ring over it (one connection for both), or a message
    /// and exit 1.
    func stateAndKeyRing() throws -> (database: CustodyDatabase, keyRing: KeyRing) {
        let database = try stateOptions.database()
        do {
            return (database, try KeyRing(store: SQLiteKeyStore(database: database), masterKey: MasterKeySource.configured(keyFile: masterKeyFile)))
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
    }
}

/// Runs `body`, turning an error of type `E` into `error: ...` on standard error and exit 1.
func reporting<E: Error, Result>(_ type: E.Type, _ body: () throws -> Result) throws -> Result {
    do {
        return try body()
    } catch let error as E {
        StandardError.write("error: \(error)\n")
        throw ExitCode.failure
    }
}

/// Runs `body`, turning a `ProtectionError` into `error: ...` on standard error and exit 1.
func reportingProtectionErrors<Result>(_ body: () throws -> Result) throws -> Result {
    try reporting(ProtectionError.self, body)
}

/// Runs `body`, turning a `StoreError` into `error: ...` on standard error and exit 1.
func reportingStoreErrors<Result>(_ body: () throws -> Result) throws -> Result {
    try reporting(StoreError.self, body)
}

/// An account given on the command line.
func parseAccount(_ text: String, option: String) throws -> AccountID {
    guard let account = AccountID(text) else { throw ValidationError("\(option) must name an account (a UPN or an OID)") }
    return account
}
