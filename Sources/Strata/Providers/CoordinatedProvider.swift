public import Logging
import Synchronization
public import _StrataInternals

/// The state of a ``CoordinatedProvider``: one fetch per ID and the requests waiting for it.
/// A pure value; the provider keeps it behind a lock and acts on its decisions after unlocking.
@usableFromInline
struct CoordinationState<ID: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline
    typealias Continuation = CheckedContinuation<Value, any Error>

    /// Who waits for a fetch: one request for one ID, or one position of a request for many.
    @usableFromInline
    enum Waiting: Sendable {
        case single(Continuation)
        case batch(BatchCollector<Value>, position: Int)

        /// Hands the fetch's result to the waiter.
        @inlinable
        func resume(with result: Result<Value, any Error>) {
            switch self {
            case .single(let continuation): continuation.resume(with: result)
            case .batch(let collector, let position): collector.deliver(result, at: position)
            }
        }
    }

    /// The waiters of one fetch, in arrival order, each with its request's number; `nil` where one
    /// was cancelled.
    @usableFromInline
    typealias Waiters = [(number: UInt64, waiting: Waiting)?]

    @usableFromInline
    struct Fetch: Sendable {
        /// The waiters in the order they registered, each with its request's number; a cancelled
        /// waiter leaves `nil`.
        ///
        /// Arrival order is fair, and it matters for speed: requests made from one task group that
        /// finish in the order they were added are cheap for the group to collect, while a random
        /// order (a dictionary's) costs the Swift runtime a walk of the group's children per
        /// request, quadratic in the number of waiters (about 28 µs per waiter at 10,000 waiters in
        /// strata-bench).
        @usableFromInline private(set) var waiters: Waiters
        /// Where each waiting request is in `waiters`, built by the first cancellation: a
        /// registration only appends, so the lock every request of a burst takes is held for as
        /// short a time as it can be, instead of also hashing into a table of up to one entry per
        /// waiter that is rebuilt as it grows. With the reused storage of `spareWaiters`, this
        /// took provider.coordinated.10000 from about 3.2 to 2.5 µs added per waiter (paired
        /// builds, five runs each).
        @usableFromInline var slots: [UInt64: Int]?
        @usableFromInline var task: Task<Void, Never>?
        /// Tells this fetch from a later one for the same ID, so a task attaches only to its own.
        @usableFromInline let serial: UInt64
        /// Whether one source call fetches this ID with others (see `batches`); its task is then
        /// the batch's.
        @usableFromInline let inBatch: Bool

        /// The number of waiters still waiting.
        @usableFromInline private(set) var waiterCount = 0

        /// A fetch whose waiters go into `buffer` (empty; a finished fetch's storage, reused).
        @inlinable init(serial: UInt64, inBatch: Bool = false, buffer: Waiters = []) {
            self.serial = serial
            self.inBatch = inBatch
            self.waiters = buffer
        }

        @inlinable
        mutating func add(_ waiter: UInt64, _ continuation: Waiting) {
            slots?[waiter] = waiters.count
            waiters.append((waiter, continuation))
            waiterCount += 1
        }

        /// Removes `waiter` and returns its continuation, or `nil` if it is not waiting here.
        @inlinable
        mutating func remove(_ waiter: UInt64) -> Waiting? {
            if slots == nil {
                var index: [UInt64: Int] = [:]
                index.reserveCapacity(waiters.count)
                for (slot, entry) in waiters.enumerated() {
                    if let entry { index[entry.number] = slot }
                }
                slots = index
            }
            guard let slot = slots?.removeValue(forKey: waiter) else { return nil }
            defer {
                waiters[slot] = nil
                waiterCount -= 1
            }
            return waiters[slot]?.waiting
        }
    }

    @usableFromInline private(set) var fetches: [ID: Fetch] = [:]
    /// The emptied storage of a finished fetch's waiters, for the next fetch to fill: a burst of
    /// thousands of waiters then appends into room it already has, instead of growing an array
    /// through a dozen reallocations (each a large allocation, inside the lock every waiter
    /// takes) and freeing it again.
    @usableFromInline var spareWaiters: Waiters = []
    /// The fetches of many IDs in one source call, by serial: the call's task and how many of
    /// its IDs still have a waiter. The task is cancelled only when none has.
    @usableFromInline var batches: [UInt64: (task: Task<Void, Never>?, waited: Int)] = [:]
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
            fetches[id]?.add(waiter, .single(continuation))
            return .joined
        }
        nextSerial &+= 1
        var fetch = Fetch(serial: nextSerial, buffer: takeSpareWaiters())
        fetch.add(waiter, .single(continuation))
        fetches[id] = fetch
        return .startFetch(serial: nextSerial)
    }

    @usableFromInline
    enum BatchRegistration {
        /// Fetch `claimed` (those of the IDs no fetch was running for) in one call with this
        /// serial; `joined` IDs were already being fetched.
        case startFetch(claimed: [ID], serial: UInt64, joined: Int)
        /// The waiter was cancelled before it registered: fail it with cancellation now.
        case cancelled
    }

    /// Registers one waiter for every ID of `ids` (distinct), position by position in
    /// `collector`: it joins the fetches already running and claims the rest for one new fetch.
    @inlinable
    mutating func register(_ waiter: UInt64, for ids: [ID], collector: BatchCollector<Value>) -> BatchRegistration {
        if !cancelledEarly.isEmpty, cancelledEarly.remove(waiter) != nil { return .cancelled }
        nextSerial &+= 1
        let serial = nextSerial
        var claimed: [ID] = []
        for (position, id) in ids.enumerated() {
            if fetches[id] == nil {
                fetches[id] = Fetch(serial: serial, inBatch: true)
                claimed.append(id)
            }
            fetches[id]?.add(waiter, .batch(collector, position: position))
        }
        if !claimed.isEmpty { batches[serial] = (nil, claimed.count) }
        return .startFetch(claimed: claimed, serial: serial, joined: ids.count - claimed.count)
    }

    /// Records the task of the batch fetch `serial`. Returns `false` if none of its IDs has a
    /// waiter any more: the caller then cancels the task.
    @inlinable
    mutating func attach(_ task: Task<Void, Never>, toBatch serial: UInt64) -> Bool {
        guard batches[serial] != nil else { return false }
        batches[serial]?.task = task
        return true
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
        @usableFromInline var continuation: Waiting?
        @usableFromInline var tasksToCancel: [Task<Void, Never>] = []

        @inlinable init(continuation: Waiting? = nil) {
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
        if let task = leaveIfUnwaited(id) { departure.tasksToCancel.append(task) }
        return departure
    }

    /// A waiter for many IDs was cancelled: it leaves each of their fetches; each fetch, or
    /// batch of fetches, that no one waits for any more is cancelled.
    @inlinable
    mutating func cancel(_ waiter: UInt64, forAll ids: [ID]) -> [Task<Void, Never>] {
        var tasks: [Task<Void, Never>] = []
        var found = false
        for id in ids where fetches[id]?.remove(waiter) != nil {
            found = true
            if let task = leaveIfUnwaited(id) { tasks.append(task) }
        }
        if !found { cancelledEarly.insert(waiter) }
        return tasks
    }

    /// Forgets the fetch of `id` if no one waits for it, and returns the task to cancel: its
    /// own, or its batch's once none of the batch's IDs is waited for.
    @inlinable
    mutating func leaveIfUnwaited(_ id: ID) -> Task<Void, Never>? {
        guard let fetch = fetches[id], fetch.waiterCount == 0 else { return nil }
        fetches[id] = nil
        guard fetch.inBatch else { return fetch.task }
        guard var batch = batches[fetch.serial] else { return nil }
        batch.waited -= 1
        if batch.waited > 0 {
            batches[fetch.serial] = batch
            return nil
        }
        batches[fetch.serial] = nil
        return batch.task
    }

    /// A request is leaving after its task was cancelled: forgets any mark its cancellation left.
    @inlinable
    mutating func forgetCancellation(of waiter: UInt64) {
        cancelledEarly.remove(waiter)
    }

    /// The fetch `serial` for `id` finished: returns every waiter to resume, in the order they
    /// arrived (`nil` where one was cancelled). A newer fetch of the ID (started after every
    /// waiter of this one left) is left alone.
    @inlinable
    mutating func finish(_ id: ID, serial: UInt64) -> Waiters {
        guard fetches[id]?.serial == serial, let fetch = fetches.removeValue(forKey: id) else { return [] }
        return fetch.waiters
    }

    /// The batch fetch `serial` finished: returns the waiters of each of `ids`, in its order.
    @inlinable
    mutating func finishBatch(_ ids: [ID], serial: UInt64) -> [Waiters] {
        batches[serial] = nil
        return ids.map { finish($0, serial: serial) }
    }

    /// The most waiters' room kept for reuse: enough for the bursts that need it, without holding
    /// on to the memory of a rare enormous one.
    @inlinable static var spareWaitersLimit: Int { 1 << 16 }

    /// Keeps `waiters`' storage (which the caller has emptied) for the next fetch, if none is kept.
    @inlinable
    mutating func recycle(_ waiters: inout Waiters) {
        guard spareWaiters.capacity < waiters.capacity, waiters.capacity <= Self.spareWaitersLimit else { return }
        swap(&spareWaiters, &waiters)
    }

    @inlinable
    mutating func takeSpareWaiters() -> Waiters {
        var buffer: Waiters = []
        if spareWaiters.capacity > 0 { swap(&buffer, &spareWaiters) }
        return buffer
    }
}

/// Collects the values of one request for many IDs as their fetches finish, and resumes the
/// request once: with every value, or with the first failure.
@usableFromInline
final class BatchCollector<Value: Sendable>: Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var values: [Value?]
        @usableFromInline var remaining: Int
        @usableFromInline var continuation: CheckedContinuation<[Value], any Error>?
        /// How the request ends, once it is known; kept until the continuation is there.
        @usableFromInline var outcome: Result<[Value], any Error>?
    }

    @usableFromInline let state: LockedState<State>

    @usableFromInline
    init(count: Int) {
        state = LockedState(State(values: Array(repeating: nil, count: count), remaining: count))
    }

    /// Gives the collector the request's continuation; resumes it at once if the request has
    /// already ended (a cancellation that came first).
    @inlinable
    func wait(with continuation: CheckedContinuation<[Value], any Error>) {
        let outcome: Result<[Value], any Error>? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let outcome { continuation.resume(with: outcome) }
    }

    /// Records the result for `position`; the last value, or a failure, ends the request.
    @inlinable
    func deliver(_ result: Result<Value, any Error>, at position: Int) {
        switch result {
        case .failure(let error):
            end(with: .failure(error))
        case .success(let value):
            let values: [Value]? = state.withLock { state in
                guard state.outcome == nil, state.values[position] == nil else { return nil }
                state.values[position] = value
                state.remaining -= 1
                guard state.remaining == 0 else { return nil }
                return state.values.compactMap { $0 }
            }
            if let values { end(with: .success(values)) }
        }
    }

    /// Ends the request with `outcome` unless it has ended: resumes it, or keeps the outcome for
    /// ``wait(with:)``.
    @inlinable
    func end(with outcome: Result<[Value], any Error>) {
        let continuation: CheckedContinuation<[Value], any Error>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: outcome)
    }
}

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
