public import Logging
import Synchronization
public import _StrataInternals

/// A provider that lets only one fetch per ID run at a time: concurrent requests for the same ID
/// wait for that fetch and all receive its value or its error.
///
/// Created by ``Provider/coordinated(logger:metrics:)``. Finish every async chain with it. Requests for
/// different IDs run in parallel. A failure is not remembered: the next request fetches again.
/// A cancelled request returns ``StorageError/Code/cancelled`` at once without disturbing the
/// others; when every request for an ID has been cancelled, the fetch itself is cancelled.
/// Any task may use it.
public final class CoordinatedProvider<Base: Provider>: Provider, Sendable where Base.ID: Hashable {
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
    ///
    /// Inlinable, like the batch path and `startFetch`, so that the caller's module specializes
    /// it: unspecialized, every request ran generic dictionary and enum code inside the lock,
    /// and the two cooperative threads queued on it (provider.coordinated.10000 added about
    /// 5.5 µs per waiter over the direct calls when this was only `@usableFromInline`, against
    /// about 2.7 µs inlinable, in the same runs on a loaded 2-core machine).
    @inlinable
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
                try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Value, any Error>) in
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
                departure.continuation?.resume(with: .failure(CancellationError()))
                for task in departure.tasksToCancel { task.cancel() }
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

    /// Returns the values for `ids`, in the same order.
    ///
    /// Values the provider below can give at once are taken at once. Each other ID joins the
    /// fetch already running for it, if any (a single request's or another batch's); the rest
    /// are fetched together, in one call to the provider below, which requests for any of them
    /// made meanwhile join. A failure of any fetch fails the whole request. A cancelled request
    /// returns ``StorageError/Code/cancelled`` at once; the batch's call is cancelled when no
    /// request waits for any of its IDs.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var found = [Value?](repeating: nil, count: ids.count)
        var positions: [ID: [Int]] = [:]
        var pending: [ID] = []
        for (position, id) in ids.enumerated() {
            if case .found(let value) = try base.immediateValue(for: id) {
                found[position] = value
                continue
            }
            if positions[id] == nil { pending.append(id) }
            positions[id, default: []].append(position)
        }
        if !pending.isEmpty {
            let fetched = try await coordinatedValues(for: pending)
            for (id, value) in zip(pending, fetched) {
                for position in positions[id] ?? [] { found[position] = value }
            }
        }
        return found.compactMap { $0 }
    }

    /// Joins or starts the fetches of `ids` (distinct).
    @inlinable
    func coordinatedValues(for ids: [ID]) async throws(StorageError) -> [Value] {
        let waiter = makeWaiterID()
        let collector = BatchCollector<Value>(count: ids.count)
        defer {
            if Task.isCancelled {
                state.withLock { $0.forgetCancellation(of: waiter) }
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Value], any Error>) in
                    collector.wait(with: continuation)
                    switch state.withLock({ $0.register(waiter, for: ids, collector: collector) }) {
                    case .startFetch(let claimed, let serial, let joined):
                        for _ in 0..<joined { observer?.recordCoalescedWaiter() }
                        if !claimed.isEmpty { startBatchFetch(for: claimed, serial: serial) }
                    case .cancelled:
                        collector.end(with: .failure(CancellationError()))
                    }
                }
            } onCancel: {
                let tasks = state.withLock { $0.cancel(waiter, forAll: ids) }
                collector.end(with: .failure(CancellationError()))
                for task in tasks { task.cancel() }
            }
        } catch {
            throw StorageError.wrapping(
                error,
                as: .sourceFailed,
                key: nil,
                storage: "CoordinatedProvider",
                message: "the fetch of \(ids.count) IDs failed"
            )
        }
    }

    @inlinable
    func startBatchFetch(for ids: [ID], serial: UInt64) {
        observer?.recordSourceCall()
        let task = Task { [base, state, observer] in
            var result: Result<[Value], StorageError>
            do throws(StorageError) {
                result = .success(try await base.values(for: ids))
            } catch {
                result = .failure(error)
            }
            if case .success(let values) = result, values.count != ids.count {
                result = .failure(
                    StorageError(
                        .sourceFailed,
                        storage: "CoordinatedProvider",
                        message: "the provider below returned \(values.count) values for \(ids.count) IDs"
                    )
                )
            }
            let waiters = state.withLock { $0.finishBatch(ids, serial: serial) }
            if case .failure(let error) = result, error.code != .cancelled {
                observer?.log(
                    .info,
                    "CoordinatedProvider: a fetch of many IDs failed for every request waiting on it",
                    reason: "\(error.code): \(error.message)",
                    key: nil,
                    metadata: ["ids": "\(ids.count)"]
                )
            }
            for (index, waiting) in waiters.enumerated() {
                let shared = result.map { $0[index] }.mapError { $0 as any Error }
                for case let waiter? in waiting { waiter.waiting.resume(with: shared) }
            }
        }
        if !state.withLock({ $0.attach(task, toBatch: serial) }) {
            task.cancel()
        }
    }

    @usableFromInline
    func makeWaiterID() -> UInt64 {
        nextWaiter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    @inlinable
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
            var waiters = state.withLock { $0.finish(id, serial: serial) }
            if case .failure(let error) = result, error.code != .cancelled {
                observer?.log(
                    .info,
                    "CoordinatedProvider: a fetch failed for every request waiting on it",
                    reason: "\(error.code): \(error.message)",
                    key: "\(id)",
                    metadata: ["waiters": "\(waiters.count { $0 != nil })"]
                )
            }
            let shared = result.mapError { $0 as any Error }
            for case let waiter? in waiters {
                waiter.waiting.resume(with: shared)
            }
            // Only a burst's storage is worth a lock to keep.
            if waiters.capacity >= 64 {
                waiters.removeAll(keepingCapacity: true)
                state.withLock { $0.recycle(&waiters) }
            }
        }
        if !state.withLock({ $0.attach(task, to: id, serial: serial) }) {
            task.cancel()
        }
    }
}

extension Provider where ID: Hashable {
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
