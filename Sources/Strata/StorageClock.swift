public import Foundation
import _StrataInternals

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

/// A clock that stands still until you move it, for tests of expiry.
///
/// Any task may use it.
public final class ManualClock: StorageClock, Sendable {
    private let current: LockedState<Date>

    /// Creates a clock reading `start`.
    public init(start: Date = Date(timeIntervalSinceReferenceDate: 0)) {
        current = LockedState(start)
    }

    /// The current time.
    public func now() -> Date {
        current.withLock { $0 }
    }

    /// Moves the clock forward by `duration`.
    public func advance(by duration: Duration) {
        current.withLock { $0 += duration.timeInterval }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    @usableFromInline
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
