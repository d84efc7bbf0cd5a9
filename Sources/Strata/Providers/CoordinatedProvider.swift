/// The state of a ``CoordinatedProvider``: one fetch per ID and the requests waiting for it.
/// A pure value; the provider keeps it behind a lock and acts on its decisions after unlocking.
struct CoordinationState<ID: Hashable, Value> {
    typealias Continuation = CheckedContinuation<Value, any Error>

    struct Fetch {
        var waiters: [UInt64: Continuation] = [:]
        var task: Task<Void, Never>?
    }

    private(set) var fetches: [ID: Fetch] = [:]
    /// Waiters given an ID that have not registered yet.
    private var arriving: Set<UInt64> = []
    /// Waiters whose cancellation arrived before they were registered.
    private var cancelledEarly: Set<UInt64> = []
    private var nextWaiter: UInt64 = 0

    mutating func makeWaiterID() -> UInt64 {
        nextWaiter &+= 1
        arriving.insert(nextWaiter)
        return nextWaiter
    }

    enum Registration {
        /// The first waiter: start the fetch.
        case startFetch
        /// A fetch is already running; wait for it.
        case joined
        /// The waiter was cancelled before it registered: resume it with cancellation now.
        case cancelled
    }

    mutating func register(_ waiter: UInt64, for id: ID, continuation: Continuation) -> Registration {
        arriving.remove(waiter)
        if cancelledEarly.remove(waiter) != nil { return .cancelled }
        if fetches[id] != nil {
            fetches[id]?.waiters[waiter] = continuation
            return .joined
        }
        fetches[id] = Fetch(waiters: [waiter: continuation])
        return .startFetch
    }

    /// Records the task fetching `id`. Returns `false` if every waiter left before it started, in
    /// which case the caller cancels the task.
    mutating func attach(_ task: Task<Void, Never>, to id: ID) -> Bool {
        guard fetches[id] != nil else { return false }
        fetches[id]?.task = task
        return true
    }

    struct Departure {
        var continuation: Continuation?
        var taskToCancel: Task<Void, Never>?
    }

    /// A waiter was cancelled: it leaves; the fetch is cancelled when it was the last.
    mutating func cancel(_ waiter: UInt64, for id: ID) -> Departure {
        guard let continuation = fetches[id]?.waiters.removeValue(forKey: waiter) else {
            // Not registered yet: it will see the mark. Already resumed: nothing to do.
            if arriving.contains(waiter) { cancelledEarly.insert(waiter) }
            return Departure()
        }
        var departure = Departure(continuation: continuation)
        if fetches[id]?.waiters.isEmpty == true {
            departure.taskToCancel = fetches.removeValue(forKey: id)?.task
        }
        return departure
    }

    /// The fetch for `id` finished: returns every waiter to resume.
    mutating func finish(_ id: ID) -> [Continuation] {
        guard let fetch = fetches.removeValue(forKey: id) else { return [] }
        return Array(fetch.waiters.values)
    }
}

/// A provider that lets only one fetch per ID run at a time: concurrent requests for the same ID
/// wait for that fetch and all receive its value or its error.
///
/// Created by ``AsyncProvider/coordinated()``. Finish every async chain with it. Requests for
/// different IDs run in parallel. A failure is not remembered: the next request fetches again.
/// A cancelled request returns ``StorageError/Code/cancelled`` at once without disturbing the
/// others; when every request for an ID has been cancelled, the fetch itself is cancelled.
/// Any task may use it.
public final class CoordinatedProvider<Base: AsyncProvider>: AsyncProvider, Sendable where Base.ID: Hashable {
    public typealias ID = Base.ID
    public typealias Value = Base.Value

    private let base: Base
    private let state = LockedState(CoordinationState<ID, Value>())

    init(base: Base) {
        self.base = base
    }

    /// The number of IDs being fetched right now.
    public var fetchesInFlight: Int {
        state.withLock { $0.fetches.count }
    }

    /// The number of requests waiting for a fetch right now, for tests and benchmarks that must
    /// know when every request has joined.
    package var waitersInFlight: Int {
        state.withLock { state in state.fetches.values.reduce(0) { $0 + $1.waiters.count } }
    }

    public func value(for id: ID) async throws(StorageError) -> Value {
        let waiter = state.withLock { $0.makeWaiterID() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                    switch state.withLock({ $0.register(waiter, for: id, continuation: continuation) }) {
                    case .startFetch:
                        startFetch(for: id)
                    case .joined:
                        break
                    case .cancelled:
                        continuation.resume(throwing: CancellationError())
                    }
                }
            } onCancel: {
                let departure = state.withLock { $0.cancel(waiter, for: id) }
                departure.continuation?.resume(throwing: CancellationError())
                departure.taskToCancel?.cancel()
            }
        } catch {
            throw StorageError.wrapping(
                error,
                as: .sourceFailed,
                key: id,
                storage: "CoordinatedProvider",
                message: "the fetch failed"
            )
        }
    }

    private func startFetch(for id: ID) {
        // Cancelled by the last waiter to leave (see `CoordinationState.cancel`); otherwise it
        // runs until the base answers and resumes every waiter.
        let task = Task { [base, state] in
            let result: Result<Value, StorageError>
            do throws(StorageError) {
                result = .success(try await base.value(for: id))
            } catch {
                result = .failure(error)
            }
            let waiters = state.withLock { $0.finish(id) }
            for waiter in waiters {
                waiter.resume(with: result.mapError { $0 as any Error })
            }
        }
        if !state.withLock({ $0.attach(task, to: id) }) {
            task.cancel()
        }
    }
}

extension AsyncProvider where ID: Hashable {
    /// Returns a provider that runs one fetch per ID at a time and shares its result with every
    /// concurrent request for that ID.
    public func coordinated() -> CoordinatedProvider<Self> {
        CoordinatedProvider(base: self)
    }
}
