/// One request's wait for the state: while a task runs inside `StateRequest.$began`, every
/// call it makes that a request waits on (`PostgresSettings.requestTimeout`: an account key, a
/// first key, an account's registration) shares one deadline, counted from when the request
/// began, rather than each call having the whole timeout to itself. A protect that makes an
/// account's first key (four calls) thus answers within the timeout, not four times it.
public enum StateRequest {
    /// When the request began waiting on the state; nil outside a request (each call then has
    /// the whole timeout).
    @TaskLocal public static var began: ContinuousClock.Instant?

    /// When the write under way asked to be made, before it waited for the writes ahead of it
    /// in this process (`PolicyManager`'s gate); nil outside one. A write transaction's deadline
    /// (`PostgresSettings.transactionTimeout`) counts from then, so a write queued behind others
    /// is answered within it of asking and never commits later.
    @TaskLocal public static var writeBegan: ContinuousClock.Instant?
}
