public import Foundation
import _StrataInternals

/// A clock that stands still until you move it, for tests of expiry and of time limits.
///
/// A storage reads its dates (``now()``); what waits (``Provider/timeout(_:clock:)``, a test's
/// own sleeps) takes ``waits``, the same clock as a `Clock` of `Duration`, whose waits end when
/// ``advance(by:)`` reaches them. Any task may use it.
public final class ManualClock: StorageClock, Sendable {
    private struct State {
        var date: Date
        /// How far the clock has been moved since it was made: the `Clock` view's time.
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        /// Waits begun but not registered yet, and those of them cancelled meanwhile.
        var starting: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
        var nextSleeper: UInt64 = 0
    }

    private struct Sleeper {
        var deadline: Duration
        var continuation: UnsafeContinuation<Void, any Error>
    }

    private let state: LockedState<State>

    /// Creates a clock reading `start`.
    public init(start: Date = Date(timeIntervalSinceReferenceDate: 0)) {
        state = LockedState(State(date: start))
    }

    /// The current time.
    public func now() -> Date {
        state.withLock { $0.date }
    }

    /// Moves the clock forward by `duration`, ending every wait on ``waits`` that it reaches.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [UnsafeContinuation<Void, any Error>] in
            state.date += duration.timeInterval
            state.elapsed += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.elapsed }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// How many waits on ``waits`` have not ended yet, so that a test can move the clock once a
    /// wait has begun.
    public var waitCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// This clock as a `Clock` of `Duration`, for what waits rather than reads dates.
    public var waits: Waits { Waits(clock: self) }

    /// A ``ManualClock`` as a `Clock` of `Duration`: its time is how far the clock has been
    /// moved, and a wait ends when ``ManualClock/advance(by:)`` reaches its deadline or its task
    /// is cancelled (throwing `CancellationError`). Any task may use it.
    public struct Waits: Clock {
        /// A point on the clock: how far it had been moved.
        public struct Instant: InstantProtocol {
            /// How far the clock had been moved at this instant.
            public var offset: Duration

            /// The instant `duration` after this one.
            public func advanced(by duration: Duration) -> Instant {
                Instant(offset: offset + duration)
            }

            /// The time from this instant to `other`.
            public func duration(to other: Instant) -> Duration {
                other.offset - offset
            }

            /// Whether `lhs` comes before `rhs`.
            public static func < (lhs: Instant, rhs: Instant) -> Bool {
                lhs.offset < rhs.offset
            }
        }

        let clock: ManualClock

        /// How far the clock has been moved.
        public var now: Instant {
            Instant(offset: clock.state.withLock { $0.elapsed })
        }

        /// One nanosecond: the clock moves only when told to.
        public var minimumResolution: Duration { .nanoseconds(1) }

        /// Waits until the clock has been moved to `deadline`, or the task is cancelled.
        public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
            try await clock.sleep(until: deadline.offset)
        }
    }

    private func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextSleeper &+= 1
            state.starting.insert(state.nextSleeper)
            return state.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    state.starting.remove(id)
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if state.elapsed >= deadline { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                // Not registered yet: registering will see this. Already ended: nothing to do.
                if state.starting.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
