public import Foundation
import _StrataInternals

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
