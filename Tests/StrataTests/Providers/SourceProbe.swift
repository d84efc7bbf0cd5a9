import Strata
import _StrataInternals

/// A source for provider tests: counts its calls, can hold every call until the test opens it,
/// can fail, and records whether a held call saw its task cancelled. Any task may use it.
final class SourceProbe: Sendable {
    private struct State {
        var calls = 0
        var inFlight = 0
        var maximumInFlight = 0
        var cancellations = 0
        var isOpen = true
        var waiters: [CheckedContinuation<Void, Never>] = []
        var enteredWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var failuresLeft = 0
        var batches: [[String]] = []
    }

    private let state = LockedState(State())

    /// Creates a probe; with `held`, every call waits until ``open()``.
    init(held: Bool = false, failing failures: Int = 0) {
        state.withLock {
            $0.isOpen = !held
            $0.failuresLeft = failures
        }
    }

    var calls: Int { state.withLock { $0.calls } }
    var maximumInFlight: Int { state.withLock { $0.maximumInFlight } }
    var cancellations: Int { state.withLock { $0.cancellations } }
    /// The IDs each call of ``fetchMany(_:)`` was given, in the order the calls began.
    var batches: [[String]] { state.withLock { $0.batches } }

    /// Makes the next `count` calls fail.
    func fail(next count: Int) {
        state.withLock { $0.failuresLeft = count }
    }

    /// Lets every held call, and every later one, go on.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once at least `count` calls have started.
    func waitForCalls(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.calls >= count { return true }
                state.enteredWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The source: returns "value of <id>" or throws `ProbeFailure`.
    func fetch(_ id: String) async throws -> String {
        try await call()
        return "value of \(id)"
    }

    /// The source for many IDs: returns "value of <id>" for each, or throws `ProbeFailure`.
    func fetchMany(_ ids: [String]) async throws -> [String: String] {
        state.withLock { $0.batches.append(ids) }
        try await call()
        return Dictionary(uniqueKeysWithValues: ids.map { ($0, "value of \($0)") })
    }

    /// One call: counted, held while the probe is closed, then failed or let through.
    private func call() async throws {
        let ready: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.calls += 1
            state.inFlight += 1
            state.maximumInFlight = max(state.maximumInFlight, state.inFlight)
            let ready = state.enteredWaiters.filter { $0.count <= state.calls }.map(\.continuation)
            state.enteredWaiters.removeAll { $0.count <= state.calls }
            return ready
        }
        for waiter in ready { waiter.resume() }
        defer { state.withLock { $0.inFlight -= 1 } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
        if Task.isCancelled {
            state.withLock { $0.cancellations += 1 }
            throw CancellationError()
        }
        let shouldFail = state.withLock { state in
            defer { state.failuresLeft = max(0, state.failuresLeft - 1) }
            return state.failuresLeft > 0
        }
        if shouldFail { throw ProbeFailure() }
    }
}

struct ProbeFailure: Error, Equatable {}

/// A class value for weak caches.
final class Avatar: Sendable {
    let name: String

    init(name: String) {
        self.name = name
    }
}
