public import Foundation

/// Tells storages what time it is, so expiry can be tested without waiting.
///
/// Any task may use a clock; implementations must be thread-safe.
public protocol StorageClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: StorageClock {
    /// Creates the system clock.
    public init() {}

    /// The current time.
    @inlinable
    public func now() -> Date { Date() }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    @usableFromInline
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
