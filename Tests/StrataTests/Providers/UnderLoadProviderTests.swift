import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// `coordinated()` answers what the cache below holds without a continuation or a task, and a
/// fetch's task never attaches to a newer fetch for the same ID.
@Suite struct CoordinatedFastPathTests {
    @Test func aHitInTheCacheBelowIsAnsweredWithoutJoiningOrStartingAFetch() async throws {
        let probe = SourceProbe(held: true)
        let memory = MemoryStorage<String, String>()
        memory.set("cached a", forKey: "a")
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.cache(memory).coordinated()

        // A cancelled task: any request that registers with the coordinator returns `cancelled`,
        // so a value here proves the hit never registered.
        let answer = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await provider.value(for: "a")
        }.result

        #expect(try answer.get() == "cached a")
        #expect(probe.calls == 0)
        #expect(provider.fetchesInFlight == 0)
        #expect(provider.cancellationMarks == 0)
    }

    @Test func aMissStillCoalescesIntoOneFetchAndTheFetchedValueIsThenImmediate() async throws {
        let probe = SourceProbe(held: true)
        let memory = MemoryStorage<String, String>()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.cache(memory).coordinated()

        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try await provider.value(for: "b") } }
            await probe.waitForCalls(1)
            while provider.waitersInFlight < 8 { await Task.yield() }
            probe.open()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }

        #expect(values == Array(repeating: "value of b", count: 8))
        #expect(probe.calls == 1)
        guard case .found(let value) = try provider.immediateValue(for: "b") else {
            Issue.record("the fetched value is not in the cache")
            return
        }
        #expect(value == "value of b")
    }

    /// The interleaving forced step by step on the coordinator's state: fetch 1 finishes before
    /// its task is attached, a second request starts fetch 2, and only then does fetch 1's task
    /// try to attach. It must not replace fetch 2's task, or cancelling fetch 2's only waiter
    /// would cancel the wrong task.
    @Test func aFetchThatFinishedBeforeAttachingNeverReplacesANewerFetchsTask() async throws {
        var state = CoordinationState<String, Int>()
        let first = Task<Void, Never> {}
        let second = Task<Void, Never> { try? await Task.sleep(for: .seconds(3600)) }
        defer { second.cancel() }

        let firstSerial = try await Self.register(&state, waiter: 1)
        let finished = state.finish("a", serial: firstSerial).compactMap { $0?.waiting }
        let secondSerial = try await Self.register(&state, waiter: 2, resumeAll: finished)
        let firstAttached = state.attach(first, to: "a", serial: firstSerial)
        let secondAttached = state.attach(second, to: "a", serial: secondSerial)
        let departure = state.cancel(2, for: "a")

        #expect(firstSerial != secondSerial)
        #expect(!firstAttached, "the finished fetch's task was refused")
        #expect(secondAttached)
        #expect(departure.tasksToCancel == [second], "cancelling the last waiter cancels the running fetch")
        departure.continuation?.resume(with: .failure(CancellationError()))
    }

    /// Registers `waiter` for "a" with a continuation that is resumed at once (the test only
    /// drives the state), and returns the serial of the fetch it starts.
    private static func register(
        _ state: inout CoordinationState<String, Int>,
        waiter: UInt64,
        resumeAll finished: [CoordinationState<String, Int>.Waiting] = []
    ) async throws -> UInt64 {
        for waiting in finished { waiting.resume(with: .success(0)) }
        var registration: CoordinationState<String, Int>.Registration?
        let holder = ContinuationHolder()
        Task { _ = try? await withUnsafeThrowingContinuation { holder.store($0) } }
        let continuation = await holder.continuation()
        registration = state.register(waiter, for: "a", continuation: continuation)
        guard case .startFetch(let serial)? = registration else {
            Issue.record("waiter \(waiter) did not start a fetch: \(String(describing: registration))")
            throw CancellationError()
        }
        return serial
    }
}

/// Hands a continuation made in another task to the test.
private final class ContinuationHolder: Sendable {
    private let state = LockedState<
        (UnsafeContinuation<Int, any Error>?, CheckedContinuation<UnsafeContinuation<Int, any Error>, Never>?)
    >((nil, nil))

    func store(_ continuation: UnsafeContinuation<Int, any Error>) {
        let waiter = state.withLock { state in
            guard let waiter = state.1 else {
                state.0 = continuation
                return nil as CheckedContinuation<UnsafeContinuation<Int, any Error>, Never>?
            }
            state.1 = nil
            return waiter
        }
        waiter?.resume(returning: continuation)
    }

    func continuation() async -> UnsafeContinuation<Int, any Error> {
        await withCheckedContinuation { waiter in
            let ready = state.withLock { state in
                guard let ready = state.0 else {
                    state.1 = waiter
                    return nil as UnsafeContinuation<Int, any Error>?
                }
                state.0 = nil
                return ready
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }
}

/// Every limit answers within its length (plus a second of scheduling), whatever the operation
/// does, and on the clock it was given.
@Suite struct DeadlineTests {
    /// A clock whose every sleep ends at once: a limit of an hour passes immediately.
    struct InstantClock: Clock {
        var now: ContinuousClock.Instant { .now }
        var minimumResolution: Duration { .zero }
        func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
            try Task.checkCancellation()
        }
    }

    @Test func aTimeoutAnswersAtItsLimitEvenWhenTheOperationIgnoresCancellation() async throws {
        let gate = WaitGate()
        let limit = Duration.milliseconds(200)

        // The caller waits on threads of its own: the deadline's timer does not need the
        // cooperative pool, and neither does this caller, so the bound below holds however busy
        // the pool is with the tests running beside this one.
        let (outcome, elapsed) = await TestThreads.onTimingThreads {
            let started = ContinuousClock.now
            let outcome = await Deadline.race(within: limit) { () async -> Int in
                await gate.wait()  // ignores cancellation, as a stuck connection attempt would
                return 1
            }
            return (outcome, ContinuousClock.now - started)
        }

        guard case .timedOut = outcome else {
            Issue.record("expected a time-out, got \(outcome)")
            return
        }
        #expect(elapsed < limit + .seconds(1), "the limit reported after \(elapsed)")
        gate.open()
    }

    @Test func theLimitIsMeasuredOnTheInjectedClock() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .timeout(.seconds(3600), clock: InstantClock())

        let error = await #expect(throws: StorageError.self) { try await provider.value(for: "a") }

        #expect(error?.code == .timedOut)
        probe.open()
    }

    @Test func cancellingTheCallerAnswersCancelledAtOnce() async throws {
        let gate = WaitGate()
        let race = Task {
            await Deadline.race(within: .seconds(3600)) { () async -> Int in
                await gate.wait()
                return 1
            }
        }

        race.cancel()
        let outcome = await race.value

        guard case .cancelled = outcome else {
            Issue.record("expected cancellation, got \(outcome)")
            return
        }
        gate.open()
    }
}

/// A wait that ignores cancellation until ``open()``.
private final class WaitGate: Sendable {
    private let state = LockedState<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
