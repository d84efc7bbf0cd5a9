public import Logging
import Synchronization

/// The state of a ``CoordinatedProvider``: one fetch per ID and the requests waiting for it.
/// A pure value; the provider keeps it behind a lock and acts on its decisions after unlocking.
@usableFromInline
struct CoordinationState<ID: Hashable & Sendable, Value>: Sendable {
    @usableFromInline
    typealias Continuation = CheckedContinuation<Value, any Error>

    @usableFromInline
    struct Fetch: Sendable {
        /// The waiters' continuations in the order they registered; a cancelled waiter leaves `nil`.
        ///
        /// Arrival order is fair, and it matters for speed: requests made from one task group that
        /// finish in the order they were added are cheap for the group to collect, while a random
        /// order (a dictionary's) costs the Swift runtime a walk of the group's children per
        /// request, quadratic in the number of waiters (about 28 µs per waiter at 10,000 waiters in
        /// strata-bench).
        @usableFromInline private(set) var continuations: [Continuation?] = []
        /// Where each waiting waiter's continuation is in `continuations`.
        @usableFromInline var slots: [UInt64: Int] = [:]
        @usableFromInline var task: Task<Void, Never>?
        /// Tells this fetch from a later one for the same ID, so a task attaches only to its own.
        @usableFromInline let serial: UInt64

        /// The number of waiters still waiting.
        @inlinable var waiterCount: Int { slots.count }

        @inlinable init(serial: UInt64) {
            self.serial = serial
        }

        @inlinable
        mutating func add(_ waiter: UInt64, _ continuation: Continuation) {
            slots[waiter] = continuations.count
            continuations.append(continuation)
        }

        /// Removes `waiter` and returns its continuation, or `nil` if it is not waiting here.
        @inlinable
        mutating func remove(_ waiter: UInt64) -> Continuation? {
            guard let slot = slots.removeValue(forKey: waiter) else { return nil }
            defer { continuations[slot] = nil }
            return continuations[slot]
        }
    }

    @usableFromInline private(set) var fetches: [ID: Fetch] = [:]
    @usableFromInline var nextSerial: UInt64 = 0
    /// Waiters whose cancellation found them in no fetch: either not registered yet (they will see
    /// the mark when they register) or already resumed (they remove the mark on their way out).
    @usableFromInline var cancelledEarly: Set<UInt64> = []

    @usableFromInline init() {}

    @usableFromInline
    enum Registration {
        /// The first waiter: start the fetch, and attach its task with this serial.
        case startFetch(serial: UInt64)
        /// A fetch is already running; wait for it.
        case joined
        /// The waiter was cancelled before it registered: resume it with cancellation now.
        case cancelled
    }

    @inlinable
    mutating func register(_ waiter: UInt64, for id: ID, continuation: Continuation) -> Registration {
        if !cancelledEarly.isEmpty, cancelledEarly.remove(waiter) != nil { return .cancelled }
        if fetches[id] != nil {
            fetches[id]?.add(waiter, continuation)
            return .joined
        }
        nextSerial &+= 1
        var fetch = Fetch(serial: nextSerial)
        fetch.add(waiter, continuation)
        fetches[id] = fetch
        return .startFetch(serial: nextSerial)
    }

    /// Records the task of fetch `serial` for `id`. Returns `false` if that fetch is gone (every
    /// waiter left, or it already finished and a newer fetch for the ID may have started): the
    /// caller then cancels the task, which must never replace a newer fetch's.
    @inlinable
    mutating func attach(_ task: Task<Void, Never>, to id: ID, serial: UInt64) -> Bool {
        guard fetches[id]?.serial == serial else { return false }
        fetches[id]?.task = task
        return true
    }

    @usableFromInline
    struct Departure {
        @usableFromInline var continuation: Continuation?
        @usableFromInline var taskToCancel: Task<Void, Never>?

        @inlinable init(continuation: Continuation? = nil) {
            self.continuation = continuation
        }
    }

    /// A waiter was cancelled: it leaves; the fetch is cancelled when it was the last.
    @inlinable
    mutating func cancel(_ waiter: UInt64, for id: ID) -> Departure {
        guard let continuation = fetches[id]?.remove(waiter) else {
            cancelledEarly.insert(waiter)
            return Departure()
        }
        var departure = Departure(continuation: continuation)
        if fetches[id]?.waiterCount == 0 {
            departure.taskToCancel = fetches.removeValue(forKey: id)?.task
        }
        return departure
    }

    /// A request is leaving after its task was cancelled: forgets any mark its cancellation left.
    @inlinable
    mutating func forgetCancellation(of waiter: UInt64) {
        cancelledEarly.remove(waiter)
    }

    /// The fetch for `id` finished: returns every waiter to resume, in the order they arrived.
    @inlinable
    mutating func finish(_ id: ID) -> [Continuation] {
        guard let fetch = fetches.removeValue(forKey: id) else { return [] }
        return fetch.continuations.compactMap { $0 }
    }
}

/// A provider that lets only one fetch per ID run at a time: concurrent requests for the same ID
/// wait for that fetch and all receive its value or its error.
///
/// Created by ``AsyncProvider/coordinated(logger:metrics:)``. Finish every async chain with it. Requests for
/// different IDs run in parallel. A failure is not remembered: the next request fetches again.
/// A cancelled request returns ``StorageError/Code/cancelled`` at once without disturbing the
/// others; when every request for an ID has been cancelled, the fetch itself is cancelled.
/// Any task may use it.
public final class CoordinatedProvider<Base: AsyncProvider>: AsyncProvider, Sendable where Base.ID: Hashable {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    @usableFromInline let base: Base
    @usableFromInline let state = LockedState(CoordinationState<ID, Value>())
    /// Numbers the requests, so a cancellation can name its own.
    private let nextWaiter = Atomic<UInt64>(0)
    /// Counts source calls and coalesced waiters, and logs failed fetches; `nil` for neither.
    @usableFromInline let observer: StorageObserver?

    init(base: Base, observer: StorageObserver?) {
        self.base = base
        self.observer = observer
    }

    /// The number of IDs being fetched right now.
    public var fetchesInFlight: Int {
        state.withLock { $0.fetches.count }
    }

    /// The number of requests waiting for a fetch right now, for tests and benchmarks that must
    /// know when every request has joined.
    package var waitersInFlight: Int {
        state.withLock { state in state.fetches.values.reduce(0) { $0 + $1.waiterCount } }
    }

    /// The number of cancellations remembered for requests that have not registered yet; 0 once
    /// every request has returned.
    package var cancellationMarks: Int {
        state.withLock { $0.cancelledEarly.count }
    }

    /// Returns the value for `id`, or throws why there is none.
    ///
    /// A value the provider below can give at once (a memory cache's hit) is returned at once,
    /// with no continuation, no task and no lock.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        if case .found(let value) = try base.immediateValue(for: id) { return value }
        return try await coordinatedValue(for: id)
    }

    /// Passes the question down: coordination adds nothing to an immediate answer.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(for: id)
    }

    /// Joins or starts the one fetch for `id`.
    @usableFromInline
    func coordinatedValue(for id: ID) async throws(StorageError) -> Value {
        let waiter = makeWaiterID()
        defer {
            // A cancellation that came after this request was resumed left a mark; no later one
            // can come once the cancellation handler is gone.
            if Task.isCancelled {
                state.withLock { $0.forgetCancellation(of: waiter) }
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                    switch state.withLock({ $0.register(waiter, for: id, continuation: continuation) }) {
                    case .startFetch(let serial):
                        startFetch(for: id, serial: serial)
                    case .joined:
                        observer?.recordCoalescedWaiter()
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

    @usableFromInline
    func makeWaiterID() -> UInt64 {
        nextWaiter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    @usableFromInline
    func startFetch(for id: ID, serial: UInt64) {
        // Cancelled by the last waiter to leave (see `CoordinationState.cancel`); otherwise it
        // runs until the base answers and resumes every waiter.
        observer?.recordSourceCall()
        let task = Task { [base, state, observer] in
            let result: Result<Value, StorageError>
            do throws(StorageError) {
                result = .success(try await base.value(for: id))
            } catch {
                result = .failure(error)
            }
            let waiters = state.withLock { $0.finish(id) }
            if case .failure(let error) = result, error.code != .cancelled {
                observer?.log(
                    .info,
                    "CoordinatedProvider: a fetch failed for every request waiting on it",
                    reason: "\(error.code): \(error.message)",
                    key: "\(id)",
                    metadata: ["waiters": "\(waiters.count)"]
                )
            }
            let shared = result.mapError { $0 as any Error }
            for waiter in waiters {
                waiter.resume(with: shared)
            }
        }
        if !state.withLock({ $0.attach(task, to: id, serial: serial) }) {
            task.cancel()
        }
    }
}

extension AsyncProvider where ID: Hashable {
    /// Returns a provider that runs one fetch per ID at a time and shares its result with every
    /// concurrent request for that ID.
    ///
    /// - Parameters:
    ///   - logger: Logs a failed fetch once (not once per waiter) at `.info`, with the reason;
    ///     the ID only at `.debug`. `nil`, the default, logs nothing.
    ///   - metrics: Counts `source_calls` and `coalesced_waiters` (see ``StorageMetrics``);
    ///     `nil`, the default, counts nothing.
    public func coordinated(logger: Logger? = nil, metrics: StorageMetrics? = nil) -> CoordinatedProvider<Self> {
        CoordinatedProvider(
            base: self,
            observer: StorageObserver.make(storage: "CoordinatedProvider", logger: logger, metrics: metrics)
        )
    }
}
