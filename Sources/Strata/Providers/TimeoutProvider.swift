import _StrataInternals

/// A provider that gives up on its base after a time limit.
///
/// Created by ``Provider/timeout(_:clock:)``. On time-out the request throws
/// ``StorageError/Code/timedOut`` at once and the base's request is cancelled; a base that ignores
/// cancellation finishes in the background and its answer is dropped. Any task may use it.
public struct TimeoutProvider<Base: Provider>: Provider {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    let base: Base
    /// The longest a request may take.
    public let timeLimit: Duration
    /// Sleeps for a duration on the clock the limit is measured on; `nil` for the continuous
    /// clock, which a Dispatch timer measures instead (see `Deadline`).
    let sleep: (@Sendable (Duration) async throws -> Void)?

    /// Returns the value for `id`, or throws why there is none.
    public func value(for id: ID) async throws(StorageError) -> Value {
        let (base, limit) = (base, timeLimit)
        let operation = { @Sendable () async throws(StorageError) -> Value in try await base.value(for: id) }
        let outcome =
            if let sleep {
                await Deadline.race(sleep: { try await sleep(limit) }, operation)
            } else {
                await Deadline.race(within: limit, operation)
            }
        switch outcome {
        case .value(let value): return value
        case .failure(let error): throw error
        case .timedOut:
            throw StorageError(.timedOut, key: id, storage: "TimeoutProvider", message: "no answer within \(limit)")
        case .cancelled:
            throw StorageError(.cancelled, key: id, storage: "TimeoutProvider", message: "the request was cancelled")
        }
    }
}

extension Provider {
    /// Returns a provider whose requests fail with ``StorageError/Code/timedOut`` after `limit`,
    /// measured on `clock` (the continuous clock unless a test injects its own).
    public func timeout(_ limit: Duration, clock: some Clock<Duration> = ContinuousClock()) -> TimeoutProvider<Self> {
        if clock is ContinuousClock { return TimeoutProvider(base: self, timeLimit: limit, sleep: nil) }
        return TimeoutProvider(base: self, timeLimit: limit, sleep: { try await clock.sleep(for: $0) })
    }
}
