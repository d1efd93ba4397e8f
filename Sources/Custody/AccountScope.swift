public import CustodyPolicy

/// Whose data the code running now handles, as Intune's identity levels have it: an explicit
/// argument overrides the task's scope (`withAccount`), which overrides the process default
/// (`PolicyManager.setProcessAccount`).
///
/// Not set (nil) and explicitly unmanaged (`.unmanaged`, Intune's `""` identity) differ: an
/// unset level defers to the one below it; an unmanaged one does not.
public enum AccountScope: Sendable, Hashable {
    case account(AccountID)
    /// Explicitly no managed account: personal data.
    case unmanaged

    /// The account, or nil for unmanaged.
    public var account: AccountID? {
        if case .account(let account) = self { return account }
        return nil
    }

    /// `.account` for an account, `.unmanaged` for nil.
    public init(_ account: AccountID?) {
        self = account.map(AccountScope.account) ?? .unmanaged
    }

    /// The task's scope: set by `withAccount`, inherited by child tasks.
    @TaskLocal public static var current: AccountScope?
}

/// Runs `operation` with `account` as the task's account (nil: explicitly unmanaged); child
/// tasks it creates inherit it.
public func withAccount<Result>(_ account: AccountID?, operation: () throws -> Result) rethrows -> Result {
    try AccountScope.$current.withValue(AccountScope(account), operation: operation)
}

/// Runs `operation` with `account` as the task's account (nil: explicitly unmanaged); child
/// tasks it creates inherit it.
public func withAccount<Result>(
    _ account: AccountID?, isolation: isolated (any Actor)? = #isolation, operation: () async throws -> Result
) async rethrows -> Result {
    try await AccountScope.$current.withValue(AccountScope(account), operation: operation, isolation: isolation)
}
