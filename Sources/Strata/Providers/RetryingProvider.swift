import Foundation

extension StorageError {
    /// Whether the same operation may succeed if tried again: what the ``underlying`` error says
    /// when it is a ``RetryAdvice``; otherwise `true` for ``Code/timedOut`` and
    /// ``Code/sourceFailed`` (a source that could not be reached), `false` for every other code
    /// (a bad key, a value that does not decode, a full storage, a closed one, cancellation).
    public var isTransient: Bool {
        if let advice = underlying as? any RetryAdvice { return advice.isTransient }
        return code == .timedOut || code == .sourceFailed
    }
}

/// A provider that tries its base again after a failure, waiting longer each time.
///
/// Created by ``Provider/retrying(maximumAttemptCount:backoff:when:)``. Cancellation is never
/// retried and stops a wait at once. When the failure's ``StorageError/underlying`` error is a
/// ``RetryAdvice`` with a ``RetryAdvice/retryAfter`` (an HTTP `Retry-After`), the wait is at least
/// that long, and a failure that asks for more than ``Backoff/maximum`` is not retried. Any task
/// may use it.
public struct RetryingProvider<Base: Provider>: Provider {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    let base: Base
    /// The most attempts made for one request, the first included.
    public let maximumAttemptCount: Int
    /// The waits between attempts.
    public let backoff: Backoff
    let shouldRetry: @Sendable (StorageError) -> Bool

    /// Returns the value for `id`, or throws why there is none.
    public func value(for id: ID) async throws(StorageError) -> Value {
        try await retrying(key: id) { () async throws(StorageError) in try await base.value(for: id) }
    }

    /// Returns the values for `ids` from one call to the base, the whole call retried as one
    /// request is.
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        try await retrying(key: nil) { () async throws(StorageError) in try await base.values(for: ids) }
    }

    private func retrying<Result>(
        key: (any Sendable)?,
        _ attemptOnce: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        var attempt = 1
        while true {
            do throws(StorageError) {
                return try await attemptOnce()
            } catch {
                guard attempt < maximumAttemptCount, error.code != .cancelled, shouldRetry(error) else { throw error }
                var delay = backoff.delay(afterAttempt: attempt, random: Double.random(in: 0..<1))
                if let asked = (error.underlying as? any RetryAdvice)?.retryAfter {
                    // A source that asks for a longer wait than the backoff ever waits is not
                    // asked again within this request.
                    guard asked <= backoff.maximum else { throw error }
                    delay = max(delay, asked)
                }
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw StorageError(
                        .cancelled,
                        key: key,
                        storage: "RetryingProvider",
                        message: "cancelled while waiting to retry"
                    )
                }
                attempt += 1
            }
        }
    }
}

extension Provider {
    /// Returns a provider that retries failed requests up to `maximumAttemptCount` attempts in
    /// all.
    ///
    /// - Parameters:
    ///   - maximumAttemptCount: The most attempts in all, the first included; at least 1.
    ///   - backoff: How long to wait before each retry.
    ///   - shouldRetry: Which failures to retry; by default those that
    ///     ``StorageError/isTransient`` says may pass (a time-out, a source that could not be
    ///     reached or answered 5xx, 408 or 429), never cancellation.
    /// - Precondition: `maximumAttemptCount` is at least 1.
    public func retrying(
        maximumAttemptCount: Int = 3,
        backoff: Backoff = .default,
        when shouldRetry: @escaping @Sendable (StorageError) -> Bool = { $0.isTransient }
    ) -> RetryingProvider<Self> {
        precondition(maximumAttemptCount >= 1, "maximumAttemptCount must be at least 1, got \(maximumAttemptCount)")
        return RetryingProvider(
            base: self,
            maximumAttemptCount: maximumAttemptCount,
            backoff: backoff,
            shouldRetry: shouldRetry
        )
    }
}
