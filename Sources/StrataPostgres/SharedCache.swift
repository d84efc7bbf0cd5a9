#if Postgres
public import Foundation
import PostgresNIO
public import Strata
import Synchronization
import _StrataInternals

/// A memory layer in front of a ``PostgresStorage`` that other processes' changes invalidate: when
/// any process sets or removes a key in the table, every other process's `SharedCache` drops that
/// key from its memory, through PostgreSQL's `LISTEN`/`NOTIFY`.
///
/// Reads are answered from memory when they can, else from PostgreSQL (then kept in memory);
/// writes go to PostgreSQL first, then to memory. The table's trigger announces each committed
/// change; a listening connection receives it, typically within milliseconds, and the key is
/// dropped. Until the announcement arrives another process may read the old value from its memory:
/// the cache is eventually consistent, not linearizable. While the listening connection is down
/// (a server restart), the memory layer is emptied and bypassed, so no change can be missed; it is
/// used again once listening resumes.
///
/// Expiry is not announced: a value read into memory stays there for the memory layer's own time to
/// live (or until a change evicts it), so give the memory layer a time to live no longer than the
/// staleness you accept. A change made through this cache's own ``PostgresStorage`` is not
/// announced back to it: use one
/// `SharedCache` per `PostgresStorage`. Any task may use a `SharedCache`; call ``close()`` to stop
/// listening.
///
/// ```swift
/// let shared = try await PostgresStorage(url: url)
/// let cache = try await shared.sharedCache(in: MemoryStorage(maximumCount: 10_000))
/// try await cache.set(Data("v2".utf8), forKey: "config")   // other processes drop "config"
/// ```
public final class SharedCache: Sendable {
    /// What a notification invalidated.
    public enum Invalidation: Sendable, Hashable {
        /// One key changed in another process.
        case key(String)
        /// Every key: the table was emptied, a key was too long to announce, or the listening
        /// connection was lost and may have missed changes.
        case all
    }

    /// The memory layer.
    public let memory: MemoryStorage<String, Data>
    /// The shared storage behind it.
    public let storage: PostgresStorage
    private let listener: LockedState<Task<Void, Never>?> = LockedState(nil)
    private let state: SharedCacheListener

    /// Puts `memory` in front of `storage` and starts listening; returns once notifications flow.
    ///
    /// - Parameters:
    ///   - memory: The memory layer, which this cache keeps fresh.
    ///   - storage: The shared storage behind it, whose changes other processes announce.
    ///   - heartbeatInterval: How often the cache proves its listening connection alive: it
    ///     announces a beat through another connection and must hear it back on the listening
    ///     one within the shorter of this interval and one second. A beat that does not come
    ///     back (a partition, a NAT or load-balancer timeout, a failover without a reset: a
    ///     connection that is open but silent) empties memory and bypasses it until the cache
    ///     listens again. So after a network fault no value older than the last committed
    ///     change is served for longer than this interval and one second. Two seconds by
    ///     default; a shorter one bounds staleness tighter for one notification per cache and
    ///     interval on the channel.
    ///   - onInvalidation: Called (on the listening task) after each invalidation was applied to
    ///     memory; for statistics and tests.
    ///
    /// A heartbeat interval of zero or less, or a storage whose pool allows fewer than two
    /// connections (listening keeps one for itself, so reads and writes would wait for ever), is
    /// a programmer error: the program stops with a message that names it.
    ///
    /// - Throws: `StorageError.Code.io` when listening could not start within the storage's
    ///   ``PostgresStorage/Options/operationTimeout``.
    public init(
        memory: MemoryStorage<String, Data>,
        storage: PostgresStorage,
        heartbeatInterval: Duration = .seconds(2),
        onInvalidation: (@Sendable (Invalidation) -> Void)? = nil
    ) async throws(StorageError) {
        ConfigurationRule.require(
            heartbeatInterval > .zero,
            "the heartbeat interval must be positive, got \(heartbeatInterval)",
            in: "SharedCache"
        )
        ConfigurationRule.require(
            storage.options.maximumConnectionCount >= 2,
            "a SharedCache needs a storage with maximumConnectionCount of at least 2 (one listens for "
                + "other processes' changes, the others read and write); this one allows "
                + "\(storage.options.maximumConnectionCount)",
            in: "SharedCache"
        )
        self.memory = memory
        self.storage = storage
        let state = SharedCacheListener(
            memory: memory,
            storage: storage,
            heartbeatInterval: heartbeatInterval,
            onInvalidation: onInvalidation
        )
        self.state = state
        let (ready, signalReady) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // Listens until close() or deinit cancels it, reconnecting after failures. It holds the
        // listener's state, not the cache, so releasing the cache ends it.
        let task = Task { await state.listen(signalReady: signalReady) }
        listener.withLock { $0 = task }
        let timeout = storage.options.operationTimeout
        let outcome = await Deadline.race(within: timeout) { () async -> Bool in
            for await _ in ready { return true }
            return false
        }
        let started: Bool
        if case .value(true) = outcome { started = true } else { started = false }
        guard started else {
            task.cancel()
            throw StorageError(
                .io,
                storage: "SharedCache",
                message: "could not start listening on channel \(storage.channel) within \(timeout)"
            )
        }
    }

    deinit {
        listener.withLock { $0?.cancel() }
    }

    /// Stops listening and empties memory; the storage stays open.
    public func close() async {
        let task = listener.withLock { task in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
        state.isListening.store(false, ordering: .releasing)
        memory.removeAll()
    }

    /// Whether memory is in use: `true` while notifications flow, `false` while reconnecting.
    public var isUsingMemory: Bool {
        state.isListening.load(ordering: .acquiring)
    }
}

extension SharedCache: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage {
    /// Returns the value for `key` from memory, or from PostgreSQL (then keeps it in memory).
    ///
    /// - Throws: as ``PostgresStorage/value(forKey:)``.
    public func value(forKey key: String) async throws(StorageError) -> Data? {
        let listening = isUsingMemory
        if listening, let value = memory.value(forKey: key) {
            return value
        }
        let before = state.snapshot()
        guard let (value, lifetime) = try await storage.valueWithLifetime(forKey: key) else {
            return nil
        }
        if listening {
            state.fill(value, forKey: key, timeToLive: memoryTimeToLive(for: lifetime), ifUnchangedSince: before)
        }
        return value
    }

    /// How long memory keeps a value read from PostgreSQL: no longer than the row has left, nor
    /// than the memory layer's own time to live.
    private func memoryTimeToLive(for lifetime: Lifetime) -> Duration? {
        switch lifetime {
        case .unlimited: memory.defaultTimeToLive
        case .remaining(let remaining): min(remaining, memory.defaultTimeToLive ?? remaining)
        }
    }

    /// Returns the values for `keys`, in the same order: from memory, and from PostgreSQL in one
    /// query for those memory lacks (then kept in memory).
    ///
    /// - Throws: as ``PostgresStorage/values(forKeys:)``.
    public func values(forKeys keys: [String]) async throws(StorageError) -> [Data?] {
        let listening = isUsingMemory
        var values = listening ? try await memory.values(forKeys: keys) : Array(repeating: nil, count: keys.count)
        let missing = values.indices.filter { values[$0] == nil }
        guard !missing.isEmpty else { return values }
        let before = state.snapshot()
        let found = try await storage.valuesWithLifetimes(forKeys: missing.map { keys[$0] })
        for (position, row) in zip(missing, found) {
            values[position] = row?.value
            if listening, let (value, lifetime) = row {
                state.fill(
                    value,
                    forKey: keys[position],
                    timeToLive: memoryTimeToLive(for: lifetime),
                    ifUnchangedSince: before
                )
            }
        }
        return values
    }

    /// Writes every value of `entries` to PostgreSQL in one statement, then to memory; other
    /// processes drop their keys. A key given twice keeps the later value.
    ///
    /// As with ``set(_:forKey:timeToLive:)``, memory drops the keys instead when another
    /// process's change arrives before they reach it, and a failed write leaves none of them in
    /// memory.
    public func setValues(_ entries: [(key: String, value: Data)]) async throws(StorageError) {
        let values = Dictionary(entries, uniquingKeysWith: { _, later in later })
        let before = state.snapshot()
        do {
            try await storage.setValues(values)
        } catch {
            for key in values.keys { memory.removeValue(forKey: key) }
            throw error
        }
        state.fillAfterOwnWrite(
            values.map { key, value in
                let lifetime = memoryTimeToLive(afterWriting: value, forKey: key, timeToLive: nil)
                return (key, lifetime == nil ? nil : value, lifetime ?? nil)
            },
            ifUnchangedSince: before
        )
    }

    /// How long memory may keep a value just written to PostgreSQL: the shorter of the lifetime
    /// the write gave it and the memory layer's; `nil` when memory must not keep it, because that
    /// lifetime depends on the row the write replaced (an `afterUpdate` rule) or has run out.
    private func memoryTimeToLive(afterWriting value: Data, forKey key: String, timeToLive: Duration?) -> Duration?? {
        switch storage.lifetimeOfWrite(value, forKey: key, timeToLive: timeToLive) {
        case .lifetime(let lifetime):
            let lifetimes = [lifetime, memory.defaultTimeToLive]
            return .some(lifetimes.compactMap { $0 }.min())
        case .unknown, .ranOut:
            return .none
        }
    }

    /// Answers a memory hit without suspending; anything else is `ImmediateLookup.unavailable`.
    public func immediateValue(forKey key: String) -> ImmediateLookup<Data> {
        guard isUsingMemory, let value = memory.value(forKey: key) else { return .unavailable }
        return .found(value)
    }

    /// Writes `value` to PostgreSQL, then to memory; other processes drop `key`.
    public func set(_ value: Data, forKey key: String) async throws(StorageError) {
        try await set(value, forKey: key, timeToLive: nil)
    }

    /// Writes `value` to PostgreSQL with a time to live, then to memory with the same one.
    ///
    /// If another process's change to any key arrives between the commit and the memory write, or
    /// another write of this process moves past it, memory drops `key` instead: what this write
    /// stored may no longer be the newest value. A read that fetched the old row before the commit
    /// never fills memory with it afterwards.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws(StorageError) {
        let before = state.snapshot()
        do {
            try await storage.set(value, forKey: key, timeToLive: timeToLive)
        } catch {
            memory.removeValue(forKey: key)
            throw error
        }
        if let afterCommit = state.afterCommit.withLock({ $0 }) { await afterCommit(key) }
        let lifetime = memoryTimeToLive(afterWriting: value, forKey: key, timeToLive: timeToLive)
        state.fillAfterOwnWrite(
            [(key, lifetime == nil ? nil : value, lifetime ?? nil)],
            ifUnchangedSince: before
        )
    }

    /// The highest heartbeat heard back on the current listening connection; for tests.
    package var heartbeatsHeardForTesting: UInt64 { state.beats.highest }

    /// The invalidation generation, as a read takes it before asking PostgreSQL; for tests.
    package var generationForTesting: UInt64 { state.snapshot() }

    /// Stores `value` in memory as a read does after asking PostgreSQL; for tests.
    package func fillForTesting(_ value: Data, forKey key: String, ifUnchangedSince generation: UInt64) -> Bool {
        state.fill(value, forKey: key, timeToLive: nil, ifUnchangedSince: generation)
    }

    /// Sets a closure that runs between each write's PostgreSQL commit and its memory write, for
    /// tests that deliver another process's change in that gap.
    package func setAfterCommit(_ body: (@Sendable (String) async -> Void)?) {
        state.afterCommit.withLock { $0 = body }
    }

    /// Removes `key` from PostgreSQL and memory; other processes drop it.
    public func removeValue(forKey key: String) async throws(StorageError) {
        memory.removeValue(forKey: key)
        let before = state.snapshot()
        try await storage.removeValue(forKey: key)
        state.fillAfterOwnWrite([(key, nil, nil)], ifUnchangedSince: before)
    }

    /// Updates `key` atomically in PostgreSQL (see ``PostgresStorage/update(forKey:_:)``), then
    /// memory.
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, timeToLive: nil, body)
    }

    /// Updates `key` atomically in PostgreSQL, giving the value `body` leaves a time to live of
    /// its own (see ``PostgresStorage/update(forKey:timeToLive:_:)``), then memory.
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// Updates `key` atomically in PostgreSQL, giving the value `body` leaves a lifetime of its
    /// own (see `update(forKey:lifetime:_:)`), then memory.
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        memory.removeValue(forKey: key)
        let before = state.snapshot()
        var written: Data?
        let (result, expiry) = try await storage.updateReportingExpiry(forKey: key, lifetime: lifetime) {
            (value: inout Data?) throws -> Result in
            let result = try body(&value)
            written = value
            return result
        }
        // A removal (a time to live or a rule's lifetime that has run out, or `nil` from `body`)
        // leaves nothing for memory.
        guard let expiry else {
            state.fillAfterOwnWrite([(key, nil, nil)], ifUnchangedSince: before)
            return result
        }
        if let afterCommit = state.afterCommit.withLock({ $0 }) { await afterCommit(key) }
        // Memory keeps the value no longer than what is left of its lifetime in PostgreSQL (the
        // update kept it), nor than memory's own default.
        var lifetime: Duration?
        if let expiry {
            let left = expiry - storage.options.clock.now().timeIntervalSince1970
            guard left > 0 else {
                state.fillAfterOwnWrite([(key, nil, nil)], ifUnchangedSince: before)
                return result
            }
            lifetime = .seconds(left)
        }
        let lifetimes = [lifetime, memory.defaultTimeToLive]
        state.fillAfterOwnWrite([(key, written, lifetimes.compactMap { $0 }.min())], ifUnchangedSince: before)
        return result
    }

    /// How long the value for `key` has left in PostgreSQL, which keeps every lifetime; see
    /// ``PostgresStorage/lifetime(forKey:)``.
    public func lifetime(forKey key: String) async throws(StorageError) -> Lifetime? {
        try await storage.lifetime(forKey: key)
    }

    /// Lists the keys in PostgreSQL.
    public func keys() async throws(StorageError) -> [String] {
        try await storage.keys()
    }

    /// Empties PostgreSQL's table and memory; other processes empty their memory.
    public func removeAll() async throws(StorageError) {
        memory.removeAll()
        try await storage.removeAll()
        state.emptyAfterOwnRemoval()
    }
}

extension PostgresStorage {
    /// Puts `memory` in front of this storage, kept fresh by other processes' changes; see
    /// ``SharedCache``.
    ///
    /// - Throws: as ``SharedCache/init(memory:storage:heartbeatInterval:onInvalidation:)``.
    public func sharedCache(
        in memory: MemoryStorage<String, Data> = MemoryStorage(),
        heartbeatInterval: Duration = .seconds(2),
        onInvalidation: (@Sendable (SharedCache.Invalidation) -> Void)? = nil
    ) async throws(StorageError) -> SharedCache {
        try await SharedCache(
            memory: memory,
            storage: self,
            heartbeatInterval: heartbeatInterval,
            onInvalidation: onInvalidation
        )
    }
}
#endif
