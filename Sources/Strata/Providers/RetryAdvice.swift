/// An error that knows whether trying again may succeed: ``StorageError/isTransient`` and
/// ``Provider/retrying(maximumAttemptCount:backoff:when:)`` ask it when it is a
/// ``StorageError/underlying`` error, as StrataHTTP's status errors are.
public protocol RetryAdvice: Error {
    /// Whether the same request may succeed later: a server error or a rate limit, not a
    /// missing resource or a refused request.
    var isTransient: Bool { get }
    /// How long the source asked to be left alone before the next attempt, if it said.
    var retryAfter: Duration? { get }
}
