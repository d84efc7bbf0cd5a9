import Synchronization
public import _StrataInternals

/// The state of a ``CoordinatedProvider``: one fetch per ID and the requests waiting for it.
/// A pure value; the provider keeps it behind a lock and acts on its decisions after unlocking.
@usableFromInline
struct CoordinationState<ID: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Unsafe rather than checked: a checked continuation allocates a canary object per waiter,
    /// and a burst of ten thousand waiters paid for ten thousand allocations and frees inside and
    /// around the lock. Each is resumed exactly once: by `finish`, by its cancellation (after
    /// `remove` took it out of the fetch, under the lock) or at registration when cancelled early.
    @usableFromInline
    typealias Continuation = UnsafeContinuation<Value, any Error>

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
