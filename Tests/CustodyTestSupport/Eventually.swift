/// Waits until `condition` holds, checking every 10 ms, for at most `limit`; returns whether it
/// held (checked once more at the end).
public func eventually(within limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows
    -> Bool
{
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
