import Testing

extension Tag {
    /// Concurrency stress tests, run under ThreadSanitizer in CI.
    @Tag static var stress: Self
}
