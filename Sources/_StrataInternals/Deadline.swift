package import Dispatch

/// Races an operation against a deadline: the one place Strata gives up waiting.
///
/// The operation runs in a task of its own; whichever of the operation's answer, the deadline
/// and the caller's cancellation comes first decides, and the operation's task is cancelled. The
/// caller is answered at the deadline even when the operation ignores cancellation (a connection
/// attempt, a body that keeps streaming): that task then finishes in the background and its
/// answer is dropped. A task group could not do this, since it waits for every child before it
/// returns.
///
/// On the continuous clock the deadline is a Dispatch timer on a serial queue of its own, not a
/// sleeping task: the timer fires on a thread Dispatch keeps apart from the cooperative pool, so a
/// deadline holds while the pool's few threads (one per core) are busy with other work. A
/// sleeping task would need a pool thread to wake it and another job to answer the caller, and
/// under load each of those waits its turn behind every queued job. On any other clock (a test's
/// injected one) a task sleeps on it.
package enum Deadline {
    /// The executor the operation's task prefers; `nil`, the default, leaves it on the global
    /// concurrent executor, as any new task. Tests that time a limit set it to the threads their
    /// caller waits on, so that an operation's own answer (a transport that reports at the limit)
    /// does not queue behind the jobs of every other test on the cooperative pool either.
    @TaskLocal package static var operationExecutor: (any TaskExecutor)?

    /// How a race ended.
    package enum Outcome<Value: Sendable, Failure: Error>: Sendable {
        /// The operation answered in time.
        case value(Value)
        /// The operation failed in time.
        case failure(Failure)
        /// The limit passed first.
        case timedOut
        /// The caller's task was cancelled first.
        case cancelled
    }

    /// Runs `operation`, giving up after `limit` measured on `clock`.
    package static func race<Value: Sendable, Failure: Error, C: Clock>(
        within limit: C.Duration,
        clock: C,
        _ operation: @escaping @Sendable () async throws(Failure) -> Value
    ) async -> Outcome<Value, Failure> {
        if C.self == ContinuousClock.self, let limit = limit as? Duration {
            return await race(within: limit, operation)
        }
        return await race(sleep: { try await clock.sleep(for: limit) }, operation)
    }

    /// Runs `operation`, giving up when `sleep` returns: the form for a clock held as a closure.
    package static func race<Value: Sendable, Failure: Error>(
        sleep: @escaping @Sendable () async throws -> Void,
        _ operation: @escaping @Sendable () async throws(Failure) -> Value
    ) async -> Outcome<Value, Failure> {
        await race(operation) { timedOut in
            let timer = Task {
                do {
                    try await sleep()
                    timedOut()
                } catch {
                    // Cancelled: the race is already decided.
                }
            }
            return timer.cancel
        }
    }

    /// Runs `operation`, giving up after `limit` on the continuous clock, timed by a Dispatch
    /// timer rather than a sleeping task.
    package static func race<Value: Sendable, Failure: Error>(
        within limit: Duration,
        _ operation: @escaping @Sendable () async throws(Failure) -> Value
    ) async -> Outcome<Value, Failure> {
        await race(operation) { timedOut in Timer(after: limit, fire: timedOut).cancel }
    }

    /// Runs `operation` in a task of its own against the timer `startTimer` starts (given what to
    /// call when time is up, it returns how to stop the timer). The operation's task and the
    /// timer are both stopped as soon as the race has an outcome; neither outlives the operation
    /// it serves.
    private static func race<Value: Sendable, Failure: Error>(
        _ operation: @escaping @Sendable () async throws(Failure) -> Value,
        startTimer: (_ timedOut: @escaping @Sendable () -> Void) -> @Sendable () -> Void
    ) async -> Outcome<Value, Failure> {
        let race = Race<Value, Failure>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome<Value, Failure>, Never>) in
                let work = Task(executorPreference: Deadline.operationExecutor) {
                    do throws(Failure) {
                        race.finish(.value(try await operation()))
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                let stopTimer = startTimer { race.finish(.timedOut) }
                race.start(continuation, cancellingWhenDecided: [work.cancel, stopTimer])
            }
        } onCancel: {
            race.finish(.cancelled)
        }
    }

    /// The queue every deadline's timer fires on. A serial queue of its own targets Dispatch's
    /// overcommitting root queue, whose threads are not the cooperative pool's: a timer's handler
    /// (one `finish`, which resumes a continuation) runs as soon as the timer is due.
    private static let timers = DispatchQueue(label: "strata.deadlines")

    /// `limit` in whole nanoseconds, 0 for a negative limit and `UInt64.max` for one too long to
    /// count. Never through `Int`: on 32-bit platforms (arm64_32 watchOS) `Int` ends at about 2.1 s.
    package static func nanoseconds(in limit: Duration) -> UInt64 {
        let (seconds, attoseconds) = limit.components
        guard seconds >= 0, limit > .zero else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflowAgain ? .max : total
    }

    /// The Dispatch time `limit` after `now`: `.distantFuture` when it would not fit.
    package static func dispatchTime(after limit: Duration, from now: DispatchTime) -> DispatchTime {
        let (uptime, overflow) = now.uptimeNanoseconds.addingReportingOverflow(nanoseconds(in: limit))
        // DispatchTime treats UInt64.max as "forever"; anything at or past it is the same.
        return overflow || uptime == .max ? .distantFuture : DispatchTime(uptimeNanoseconds: uptime)
    }

    /// One deadline's Dispatch timer, cancelled as soon as the race is decided.
    private final class Timer: Sendable {
        // Safe: the source is only scheduled and resumed in `init`; `cancel()` is thread-safe.
        nonisolated(unsafe) private let source: any DispatchSourceTimer

        init(after limit: Duration, fire: @escaping @Sendable () -> Void) {
            source = DispatchSource.makeTimerSource(queue: Deadline.timers)
            source.setEventHandler(handler: fire)
            source.schedule(deadline: Deadline.dispatchTime(after: limit, from: .now()), leeway: .milliseconds(1))
            source.resume()
        }

        func cancel() {
            source.cancel()
        }
    }

    /// The state of one race: the first outcome resumes the caller; later ones are ignored.
    private final class Race<Value: Sendable, Failure: Error>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Outcome<Value, Failure>, Never>?
            var early: Outcome<Value, Failure>?
            var cancellations: [@Sendable () -> Void] = []
            var isFinished = false
        }

        private let state = LockedState(State())

        /// Hands the race its caller and what to cancel once it is decided (the operation's
        /// task, the timer); an outcome that came first answers at once.
        func start(
            _ continuation: CheckedContinuation<Outcome<Value, Failure>, Never>,
            cancellingWhenDecided cancellations: [@Sendable () -> Void]
        ) {
            let early = state.withLock { state -> Outcome<Value, Failure>? in
                if let early = state.early {
                    state.early = nil
                    return early
                }
                state.continuation = continuation
                state.cancellations = cancellations
                return nil
            }
            if let early {
                for cancel in cancellations { cancel() }
                continuation.resume(returning: early)
            }
        }

        func finish(_ outcome: Outcome<Value, Failure>) {
            let (continuation, cancellations) = state.withLock {
                state -> (CheckedContinuation<Outcome<Value, Failure>, Never>?, [@Sendable () -> Void]) in
                guard !state.isFinished else { return (nil, []) }
                state.isFinished = true
                guard let continuation = state.continuation else {
                    state.early = outcome
                    return (nil, [])
                }
                state.continuation = nil
                defer { state.cancellations = [] }
                return (continuation, state.cancellations)
            }
            for cancel in cancellations { cancel() }
            continuation?.resume(returning: outcome)
        }
    }
}
