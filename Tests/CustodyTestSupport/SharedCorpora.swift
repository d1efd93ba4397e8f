public import Testing

extension Trait where Self == ConditionTrait {
    /// Runs a test or suite only where the shared corpora are (see `TestPaths.sharedAvailable`);
    /// elsewhere it is skipped with a visible reason.
    public static var needsSharedCorpora: Self {
        .enabled(if: TestPaths.sharedAvailable, Comment(rawValue: TestPaths.sharedMissingReason))
    }
}
