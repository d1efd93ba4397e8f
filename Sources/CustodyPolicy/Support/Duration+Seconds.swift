extension Duration {
    /// The duration in seconds, as a `Double` (for rates, `TimeInterval`s and printing).
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
