/// Races an operation against a deadline: the one place Strata gives up waiting.
///
/// The operation runs in a task of its own and a timer sleeps on `clock`; whichever of the
/// operation's answer, the timer and the caller's cancellation comes first decides, and the
/// other tasks are cancelled. The caller is answered at the deadline even when the operation
/// ignores cancellation (a connection attempt, a body that keeps streaming): that task then
/// finishes in the background and its answer is dropped. A task group could not do this, since
/// it waits for every child before it returns.
package enum Deadline {
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
        await race(sleep: { try await clock.sleep(for: limit) }, operation)
    }

    /// Runs `operation`, giving up when `sleep` returns: the form for a clock held as a closure.
    package static func race<Value: Sendable, Failure: Error>(
        sleep: @escaping @Sendable () async throws -> Void,
        _ operation: @escaping @Sendable () async throws(Failure) -> Value
    ) async -> Outcome<Value, Failure> {
        let race = Race<Value, Failure>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome<Value, Failure>, Never>) in
                // Both tasks are cancelled by the race as soon as it has an outcome; neither
                // outlives the operation it serves.
                let work = Task {
                    do throws(Failure) {
                        race.finish(.value(try await operation()))
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                let timer = Task {
                    do {
                        try await sleep()
                        race.finish(.timedOut)
                    } catch {
                        // Cancelled: the race is already decided.
                    }
                }
                race.start(continuation, work: work, timer: timer)
            }
        } onCancel: {
            race.finish(.cancelled)
        }
    }

    /// Runs `operation`, giving up after `limit` on the continuous clock.
    package static func race<Value: Sendable, Failure: Error>(
        within limit: Duration,
        _ operation: @escaping @Sendable () async throws(Failure) -> Value
    ) async -> Outcome<Value, Failure> {
        await race(within: limit, clock: ContinuousClock(), operation)
    }

    /// The state of one race: the first outcome resumes the caller; later ones are ignored.
    private final class Race<Value: Sendable, Failure: Error>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Outcome<Value, Failure>, Never>?
            var early: Outcome<Value, Failure>?
            var tasks: [Task<Void, Never>] = []
            var isFinished = false
        }

        private let state = LockedState(State())

        func start(
            _ continuation: CheckedContinuation<Outcome<Value, Failure>, Never>,
            work: Task<Void, Never>,
            timer: Task<Void, Never>
        ) {
            let early = state.withLock { state -> Outcome<Value, Failure>? in
                if let early = state.early {
                    state.early = nil
                    return early
                }
                state.continuation = continuation
                state.tasks = [work, timer]
                return nil
            }
            if let early {
                work.cancel()
                timer.cancel()
                continuation.resume(returning: early)
            }
        }

        func finish(_ outcome: Outcome<Value, Failure>) {
            let (continuation, tasks) = state.withLock {
                state -> (CheckedContinuation<Outcome<Value, Failure>, Never>?, [Task<Void, Never>]) in
                guard !state.isFinished else { return (nil, []) }
                state.isFinished = true
                guard let continuation = state.continuation else {
                    state.early = outcome
                    return (nil, [])
                }
                state.continuation = nil
                defer { state.tasks = [] }
                return (continuation, state.tasks)
            }
            for task in tasks { task.cancel() }
            continuation?.resume(returning: outcome)
        }
    }
}
