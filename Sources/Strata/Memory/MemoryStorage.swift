import Foundation
public import Logging

/// A storage in memory with optional count and cost limits, scan-resistant eviction and time to
/// live.
///
/// Reads and writes are O(1) and never hop to an actor, so a hit costs about as much as a
/// dictionary lookup. Entries live in shards by key hash, each behind its own lock, and a read
/// takes only its shard's: reads on different cores rarely meet, and read throughput grows with
/// cores. The eviction policy sees every write at once and the reads in batches, as in Caffeine
/// (see <doc:ChoosingAnEvictionPolicy>). Every method is synchronous; the same methods satisfy
/// the async ``Storage`` protocols, so a `MemoryStorage` also works wherever a storage is
/// expected. Any task may use it.
///
/// ```swift
/// let cache = try MemoryStorage<String, Data>(maximumCount: 1_000, maximumCost: 10_000_000)
/// cache.set(data, forKey: "avatar")
/// let avatar = cache.value(forKey: "avatar")
/// ```
public final class MemoryStorage<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline typealias Cache = ShardedMemoryCache<Key, Value>
    @usableFromInline typealias Removed = Cache.Removed

    @usableFromInline let cache: Cache
    @usableFromInline let cost: @Sendable (Value) -> Int
    private let clock: any StorageClock
    /// The time to live given to values stored without one of their own, or `nil` for none.
    public let defaultTimeToLive: Duration?
    /// The rules that work out each value's lifetime, or `nil` when ``defaultTimeToLive``
    /// decides.
    public let expiry: Expiry<Key, Value>?
    /// The rule a read applies through a second step, or `nil`: none, or an idle time, which the
    /// read itself renews.
    @usableFromInline let readRule: (@Sendable (Key, Value, Lifetime) -> Lifetime)?
    /// The largest number of entries kept, or `Int.max`.
    public let maximumCount: Int
    /// The largest total cost kept, or `Int.max`.
    public let maximumCost: Int
    /// Which entries are evicted first when a limit is reached.
    public let evictionPolicy: EvictionPolicy
    /// The logger and metrics, or `nil` when neither was asked for: then every call takes the
    /// unobserved path, which costs one branch.
    @usableFromInline let observer: StorageObserver?
    /// How the storage answers memory pressure.
    public let memoryPressure: MemoryPressureResponse
    /// The storage's place among its source's listeners while it lives, or `nil` when it does not
    /// listen.
    private let pressureSubscription: MemoryPressureSubscription?

    /// Creates an unbounded storage whose values never expire.
    public convenience init() {
        self.init(
            unchecked: .max,
            maximumCost: .max,
            timeToLive: nil,
            expiry: nil,
            evictionPolicy: .default,
            clock: SystemClock(),
            cost: nil,
            observer: nil,
            memoryPressure: .automatic
        )
    }

    /// Creates a storage with the given limits.
    ///
    /// - Parameters:
    ///   - maximumCount: The most entries kept; beyond it `evictionPolicy` chooses what goes.
    ///   - maximumCost: The most total cost kept. A value whose cost alone exceeds it is not kept.
    ///   - timeToLive: How long a value lives when `set` gives it no time of its own. An update
    ///     keeps the lifetime of the value it replaces.
    ///   - expiry: Rules that work out each value's lifetime instead: an idle time that reads
    ///     renew, or a lifetime read from the value (see ``Expiry``). Give this or `timeToLive`,
    ///     not both.
    ///   - evictionPolicy: Which entries go first when a limit is reached.
    ///   - clock: The time source for expiry; inject a ``ManualClock`` in tests.
    ///   - cost: A value's cost. By default a `Data` value costs its byte count, a `String` its
    ///     UTF-8 length and any other value 1.
    ///   - logger: Where to log an eviction storm (more than 1,000 evictions within 10 seconds,
    ///     logged once per window at `.warning`); `nil`, the default, logs nothing.
    ///   - metrics: Where to report hits, misses, evictions, sizes and latencies (see
    ///     ``StorageMetrics``); `nil`, the default, reports nothing and costs nothing.
    ///   - memoryPressure: How the storage answers memory pressure. By default a storage with a
    ///     count or cost limit keeps half of what it holds on the platform's warning and empties
    ///     on a critical event; one without limits keeps everything (see
    ///     ``MemoryPressureResponse``).
    /// - Throws: ``StorageError/Code/invalidConfiguration`` when a limit, the time to live or the
    ///   idle time of ``Expiry/afterAccess(_:)`` is zero or negative, when both `timeToLive`
    ///   and `expiry` are given, or when `memoryPressure` keeps a share outside 0 to 1.
    public convenience init(
        maximumCount: Int? = nil,
        maximumCost: Int? = nil,
        timeToLive: Duration? = nil,
        expiry: Expiry<Key, Value>? = nil,
        evictionPolicy: EvictionPolicy = .default,
        clock: any StorageClock = SystemClock(),
        cost: (@Sendable (Value) -> Int)? = nil,
        logger: Logger? = nil,
        metrics: StorageMetrics? = nil,
        memoryPressure: MemoryPressureResponse = .automatic
    ) throws(StorageError) {
        if let problem = memoryPressure.configurationProblem {
            throw StorageError(.invalidConfiguration, storage: "MemoryStorage", message: problem)
        }
        if let error = StorageError.checkingLimits(
            of: "MemoryStorage",
            maximumCount: maximumCount,
            maximumCost: maximumCost,
            costName: "maximumCost",
            timeToLive: timeToLive,
            expiry: expiry
        ) {
            throw error
        }
        self.init(
            unchecked: maximumCount ?? .max,
            maximumCost: maximumCost ?? .max,
            timeToLive: timeToLive,
            expiry: expiry,
            evictionPolicy: evictionPolicy,
            clock: clock,
            cost: cost,
            observer: StorageObserver.make(storage: "MemoryStorage", logger: logger, metrics: metrics),
            memoryPressure: memoryPressure
        )
    }

    private init(
        unchecked maximumCount: Int,
        maximumCost: Int,
        timeToLive: Duration?,
        expiry: Expiry<Key, Value>?,
        evictionPolicy: EvictionPolicy,
        clock: any StorageClock,
        cost: (@Sendable (Value) -> Int)?,
        observer: StorageObserver?,
        memoryPressure: MemoryPressureResponse
    ) {
        self.observer = observer
        self.memoryPressure = memoryPressure
        self.expiry = expiry
        self.readRule = expiry?.idleTime == nil ? expiry?.afterRead : nil
        self.maximumCount = maximumCount
        self.evictionPolicy = evictionPolicy
        self.maximumCost = maximumCost
        self.defaultTimeToLive = timeToLive
        self.clock = clock
        self.cost = cost ?? Self.defaultCost
        // With no limit, nothing is ever evicted for space: only `trim` reads the order, and plain
        // recency serves it at the lowest cost per hit.
        let unbounded = maximumCount == .max && maximumCost == .max
        let queue = unbounded ? LRUQueue() : evictionPolicy.makeQueue(capacity: maximumCount, maximumCost: maximumCost)
        let cache = Cache(
            maximumCount: maximumCount,
            maximumCost: maximumCost,
            queue: queue,
            idleTime: expiry?.idleTime?.timeInterval ?? 0,
            readsChangeLifetimes: expiry?.afterRead != nil
        )
        self.cache = cache
        // The listener holds what a trim needs, not the storage: the storage's release ends the
        // subscription, and with it the listener.
        if let source = memoryPressure.source, memoryPressure.includesUnbounded || !unbounded {
            let kept = memoryPressure.keptOnWarning
            pressureSubscription = source.subscribe { level in
                Self.relieve(cache, keeping: level == .critical ? 0 : kept)
                observer?.publish(cache.snapshot, now: clock.now().timeIntervalSinceReferenceDate)
            }
        } else {
            pressureSubscription = nil
        }
    }

    /// Evicts until `cache` holds at most `share` of its entries and cost, as pressure evictions.
    private static func relieve(_ cache: Cache, keeping share: Double) {
        var removed = cache.makeRemoved()
        cache.evictForMemoryPressure(keeping: share, removed: &removed)
        cache.publish(removed)
        _ = consume removed
    }

    /// Gives memory back as the storage's ``memoryPressure`` response says for `level`: on a
    /// warning, evicts in the eviction policy's order until at most
    /// ``MemoryPressureResponse/keptOnWarning`` of the entries and of the cost remain; on a
    /// critical event, evicts everything. Each entry counts in
    /// ``StorageStatistics/pressureEvictions``.
    ///
    /// The storage does this by itself on its source's events; call it for events of your own,
    /// such as the app moving to the background.
    public func relieveMemoryPressure(_ level: MemoryPressureLevel) {
        Self.relieve(cache, keeping: level == .critical ? 0 : memoryPressure.keptOnWarning)
        publish()
    }

    private static var defaultCost: @Sendable (Value) -> Int {
        // The measures need their `@Sendable` types spelled out: a closure literal cast with `as?`
        // is not `@Sendable`, and the cast to a `@Sendable` function type then always fails.
        let dataCost: @Sendable (Data) -> Int = { $0.count }
        if let measure = dataCost as? @Sendable (Value) -> Int {
            return measure
        }
        let stringCost: @Sendable (String) -> Int = { $0.utf8.count }
        if let measure = stringCost as? @Sendable (Value) -> Int {
            return measure
        }
        return { _ in 1 }
    }

    @usableFromInline
    func now() -> Double {
        clock.now().timeIntervalSinceReferenceDate
    }

    /// Applies the read rule to a value just read, which had `found.expiry`.
    @usableFromInline
    func applyReadRule(
        _ rule: @Sendable (Key, Value, Lifetime) -> Lifetime,
        forKey key: Key,
        found: (value: Value, version: UInt64, expiry: Double)
    ) {
        let now = now()
        // A lifetime that has run out expires the value now: this read still returns it.
        let expiry = rule(key, found.value, .left(until: found.expiry, now: now)).expiry(from: now) ?? now
        cache.renew(forKey: key, version: found.version, expiry: expiry)
    }

    // MARK: Reading

    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// A hit makes the entry the most recently used.
    @inlinable
    public func value(forKey key: Key) -> Value? {
        if let readRule { return valueApplyingReadRule(readRule, forKey: key) }
        if let observer {
            return observed(.get, observer) { cache.value(forKey: key, now: now) }
        }
        return cache.value(forKey: key, now: now)
    }

    @usableFromInline
    func valueApplyingReadRule(_ rule: @Sendable (Key, Value, Lifetime) -> Lifetime, forKey key: Key) -> Value? {
        let found =
            if let observer {
                observed(.get, observer) { cache.entry(forKey: key, now: now) }
            } else {
                cache.entry(forKey: key, now: now)
            }
        guard let found else { return nil }
        applyReadRule(rule, forKey: key, found: found)
        return found.value
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has no live value;
    /// each shard's lock is taken once for all of its keys. Each hit makes its entry the most
    /// recently used, as ``value(forKey:)`` does.
    public func values(forKeys keys: [Key]) -> [Value?] {
        readValues(forKeys: keys)
    }

    /// `values(forKeys:)`, for async callers: the same one step, without suspending. It never
    /// throws; the protocol's signature does.
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        readValues(forKeys: keys)
    }

    func readValues(forKeys keys: [Key]) -> [Value?] {
        if let readRule { return keys.map { valueApplyingReadRule(readRule, forKey: $0) } }
        if let observer {
            return observed(.get, observer) { cache.values(forKeys: keys, now: now) }
        }
        return cache.values(forKeys: keys, now: now)
    }

    /// Answers from memory, always: ``ImmediateLookup/found(_:)`` or ``ImmediateLookup/absent``.
    @inlinable
    public func immediateValue(forKey key: Key) -> ImmediateLookup<Value> {
        ImmediateLookup(value(forKey: key))
    }

    /// Whether a live value is stored for `key`. Does not count as a use.
    public func containsValue(forKey key: Key) -> Bool {
        cache.containsValue(forKey: key, now: now())
    }

    /// Returns the live value for `key`, or `nil`, without counting a use: no hit or miss in the
    /// statistics and no change to the eviction policy's view of the key, so reading it does not
    /// save it from eviction. For listing what a cache holds.
    public func peekValue(forKey key: Key) -> Value? {
        cache.versionedValue(forKey: key, now: now()).0
    }

    /// How long the value for `key` has left: ``Lifetime/unlimited``, ``Lifetime/remaining(_:)``,
    /// or `nil` when there is no live value. Does not count as a use.
    public func lifetime(forKey key: Key) -> Lifetime? {
        let now = now()
        let (value, _, expiry) = cache.versionedValue(forKey: key, now: now)
        guard value != nil else { return nil }
        return Lifetime(expiry: expiry, now: now)
    }

    /// The live value for `key` and how long it has left, read together, or `nil`. Does not
    /// count as a use.
    public func valueWithLifetime(forKey key: Key) -> (value: Value, lifetime: Lifetime)? {
        let now = now()
        let (value, _, expiry) = cache.versionedValue(forKey: key, now: now)
        guard let value, let lifetime = Lifetime(expiry: expiry, now: now) else { return nil }
        return (value, lifetime)
    }

    /// Every key with a live value, in no particular order.
    public func keys() -> [Key] {
        cache.liveKeys(now: now())
    }

    /// The number of entries held, expired ones included until they are removed.
    public var count: Int {
        cache.count
    }

    /// The total cost of the entries held.
    public var totalCost: Int {
        cache.totalCost
    }

    /// What the storage has done so far: hits, misses, evictions, expirations and more.
    public var statistics: StorageStatistics {
        cache.snapshot
    }

    // MARK: Writing

    /// Stores `value` for `key` with the default time to live, evicting what the eviction policy
    /// chooses if a limit is passed.
    ///
    /// A value whose cost alone exceeds ``maximumCost`` is not kept (counted in
    /// ``StorageStatistics/rejections``) and removes the older value for `key`; nothing else
    /// is evicted and `set` does not fail.
    @inlinable
    public func set(_ value: Value, forKey key: Key) {
        set(value, forKey: key, timeToLive: nil)
    }

    /// Stores `value` for `key`, expiring after `timeToLive` (or the default time to live when
    /// `nil`).
    ///
    /// A `timeToLive` of zero or less has already run out, as on every storage of Strata: the
    /// value is not stored, and the older value for `key` is removed.
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) {
        if let timeToLive, timeToLive <= .zero {
            removeValue(forKey: key)
            return
        }
        if timeToLive == nil, let expiry {
            set(value, forKey: key, by: expiry)
            return
        }
        let cost = cost(value)
        // One reading of the clock serves the expiry and the sweep.
        let lifetime = timeToLive ?? defaultTimeToLive
        let current = lifetime == nil ? 0 : now()
        let expiry = lifetime.map { current + $0.timeInterval } ?? .infinity
        var removed = cache.makeRemoved()
        func store(_ removed: inout CacheIndex<Key, Value>.Removed) {
            cache.set(
                value,
                forKey: key,
                cost: cost,
                expiry: expiry,
                now: { lifetime == nil ? now() : current },
                removed: &removed
            )
        }
        if let observer { observed(.set, observer) { store(&removed) } } else { store(&removed) }
        cache.publish(removed)
        _ = consume removed
        // A value costlier than the whole limit was not kept: its key was removed instead.
        if cost <= maximumCost { cache.publishSets([key]) }
    }

    /// Stores `value` with the lifetime the rules give it.
    @usableFromInline
    func set(_ value: Value, forKey key: Key, by expiry: Expiry<Key, Value>) {
        guard let observer else { return store(value, forKey: key, by: expiry) }
        observed(.set, observer) { store(value, forKey: key, by: expiry) }
    }

    private func store(_ value: Value, forKey key: Key, by expiry: Expiry<Key, Value>) {
        let cost = cost(value)
        guard expiry.hasUpdateRule else {
            let now = now()
            var removed = cache.makeRemoved()
            let newExpiry = expiry.expiry(of: value, forKey: key, replacing: nil, now: now)
            if let newExpiry {
                cache.set(value, forKey: key, cost: cost, expiry: newExpiry, now: { now }, removed: &removed)
            } else {
                cache.removeValue(forKey: key, removed: &removed)
            }
            cache.publish(removed)
            _ = consume removed
            if newExpiry != nil, cost <= maximumCost { cache.publishSets([key]) }
            return
        }
        // The rule for replaced values needs the old value's lifetime: the write is made only if
        // the entry has not changed since it was read.
        while true {
            var removed = cache.makeRemoved()
            let now = now()
            let current = cache.versionedValue(forKey: key, now: now)
            let replacing = current.value == nil ? nil : current.expiry
            let newExpiry = expiry.expiry(of: value, forKey: key, replacing: replacing, now: now)
            let committed = cache.commit(
                newExpiry == nil ? nil : value,
                forKey: key,
                ifVersion: current.version,
                now: now,
                cost: cost,
                expiry: newExpiry ?? now,
                removed: &removed
            )
            cache.publish(removed)
            _ = consume removed
            if committed {
                if newExpiry != nil, cost <= maximumCost { cache.publishSets([key]) }
                return
            }
        }
    }

    /// Stores every value in `entries` under its key, in order, with the default time to live:
    /// the eviction policy's lock is taken once for all of them.
    public func setValues(_ entries: [(key: Key, value: Value)]) {
        setValues(entries, timeToLive: nil)
    }

    /// `setValues(_:)`, for async callers: the same one step, without suspending. It never
    /// throws; the protocol's signature does.
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        setValues(entries, timeToLive: nil)
    }

    /// Stores every value in `entries` under its key, in order, expiring after `timeToLive` (or
    /// the default time to live when `nil`); the eviction policy's lock is taken once for all of
    /// them. Each value is kept or evicted as ``set(_:forKey:timeToLive:)`` would keep it.
    ///
    /// A `timeToLive` of zero or less has already run out: nothing is stored, and the older
    /// values for the keys are removed.
    public func setValues(_ entries: [(key: Key, value: Value)], timeToLive: Duration?) {
        if let timeToLive, timeToLive <= .zero {
            for entry in entries { removeValue(forKey: entry.key) }
            return
        }
        if timeToLive == nil, let expiry, expiry.hasUpdateRule {
            // Each value's lifetime may depend on the one it replaces: one write at a time.
            for entry in entries { set(entry.value, forKey: entry.key, by: expiry) }
            return
        }
        let costs = entries.map { cost($0.value) }
        let lifetime = timeToLive ?? defaultTimeToLive
        let current = lifetime == nil && expiry == nil ? 0 : now()
        let expiries: [Double?] =
            if timeToLive == nil, let expiry {
                entries.map { expiry.expiry(of: $0.value, forKey: $0.key, replacing: nil, now: current) }
            } else {
                Array(repeating: lifetime.map { current + $0.timeInterval } ?? .infinity, count: entries.count)
            }
        var removed = cache.makeRemoved()
        let start = observer?.measuresTime == true ? ContinuousClock.now : nil
        cache.setValues(
            entries,
            costs: costs,
            expiries: expiries,
            now: { lifetime == nil && expiry == nil ? now() : current },
            removed: &removed
        )
        if let observer {
            publish()
            if let start { observer.recordDuration(of: .set, since: start) }
        }
        cache.publish(removed)
        _ = consume removed
        cache.publishSets(
            zip(entries, zip(costs, expiries)).compactMap { entry, measure in
                measure.0 <= maximumCost && measure.1 != nil ? entry.key : nil
            }
        )
    }

    /// Removes the value for `key`, if any.
    public func removeValue(forKey key: Key) {
        var removed = cache.makeRemoved()
        if let observer {
            observed(.remove, observer) { cache.removeValue(forKey: key, removed: &removed) }
        } else {
            cache.removeValue(forKey: key, removed: &removed)
        }
        cache.publish(removed)
        _ = consume removed
    }

    /// Removes every value. Statistics are kept.
    public func removeAll() {
        let old = cache.removeAll()
        if cache.removals.isActive {
            cache.removals.publish(
                old.flatMap { shard in shard.map { Removal(key: $0.key.key, value: $0.value.value, cause: .cleared) } }
            )
        }
        if cache.changes.isActive {
            cache.changes.publish(
                old.flatMap { shard in shard.keys.map { StorageChange(key: $0.key, kind: .cleared) } }
            )
        }
        _ = consume old
        publish()
    }

    /// The values that leave the storage from now on, each with its key and why it left
    /// (``RemovalCause``): expired, evicted for size or for count, replaced, removed or cleared.
    ///
    /// Removals are delivered in the order each operation made them, after the storage's locks are
    /// released. The storage never waits for a listener: the stream keeps the newest `limit`
    /// removals not read yet and drops older ones, so a listener that falls behind (or never
    /// reads) misses some, and costs at most its buffer. While nobody listens, nothing is
    /// collected. Stop listening by ending the iteration or cancelling its task.
    ///
    /// ```swift
    /// for await removal in cache.removals() where removal.cause == .expired {
    ///     print("\(removal.key) expired")
    /// }
    /// ```
    public func removals(bufferingNewest limit: Int = 1_000) -> AsyncStream<Removal<Key, Value>> {
        cache.removals.subscribe(bufferingNewest: limit)
    }

    /// What changes from now on: each key set, removed, expired, evicted or cleared, in the order
    /// the storage made the changes, after its locks are released (see ``ObservableStorage``).
    /// A value replaced by a write is reported as the write's ``StorageChange/Kind/set``. The
    /// storage never waits for a listener: the stream keeps the newest `limit` changes not read
    /// yet. While nobody listens, writes pay one relaxed atomic load.
    ///
    /// ```swift
    /// for await change in cache.changes() where change.key == "avatar" {
    ///     print("avatar \(change.kind)")
    /// }
    /// ```
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>> {
        cache.changes.subscribe(bufferingNewest: limit)
    }

    /// How many listen to ``changes(bufferingNewest:)`` now.
    package var changeListenerCount: Int {
        cache.changes.listenerCount
    }

    /// Removes every expired value now rather than when it is next read, and returns how many
    /// there were.
    @discardableResult
    public func removeExpired() -> Int {
        var removed = cache.makeRemoved()
        let count = cache.removeExpired(now: now(), removed: &removed)
        cache.publish(removed)
        _ = consume removed
        publish()
        return count
    }

    /// Evicts entries, in the eviction policy's order, until the total cost is at most `cost`.
    public func trim(toCost cost: Int) {
        var removed = cache.makeRemoved()
        cache.evict(toCount: .max, toCost: max(cost, 0), removed: &removed)
        cache.publish(removed)
        _ = consume removed
        publish()
    }

    /// Evicts entries, in the eviction policy's order, until at most `count` remain.
    public func trim(toCount count: Int) {
        var removed = cache.makeRemoved()
        cache.evict(toCount: max(count, 0), toCost: .max, removed: &removed)
        cache.publish(removed)
        _ = consume removed
        publish()
    }

    /// Reads the value for `key`, lets `body` change it and writes it back atomically; setting it
    /// to `nil` removes it.
    ///
    /// `body` runs without the lock held; if another writer changed the key meanwhile, `body` runs
    /// again on the newer value, so it should have no side effects.
    ///
    /// - Throws: ``StorageError/Code/updateAborted`` when `body` throws; nothing is written.
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, timeToLive: nil, body)
    }

    /// ``update(forKey:_:)``, giving the value `body` leaves a time to live of its own: with one,
    /// the value expires after it whether it is new or replaces one (zero or less removes the key);
    /// with `nil`, a replaced value keeps its lifetime and a new one gets the default.
    ///
    /// - Throws: ``StorageError/Code/updateAborted`` when `body` throws; nothing is written.
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        timeToLive: Duration?,
        _ body: (inout Value?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// ``update(forKey:_:)``, giving the value `body` leaves a lifetime of its own: with one, the
    /// value gets it whether it is new or replaces one (``Lifetime/unlimited`` never expires,
    /// whatever the default; zero or less removes the key); with `nil`, a replaced value keeps its
    /// lifetime and a new one gets the default.
    ///
    /// - Throws: ``StorageError/Code/updateAborted`` when `body` throws; nothing is written.
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) throws(StorageError) -> Result {
        let start = observer?.measuresTime == true ? ContinuousClock.now : nil
        defer {
            if let observer {
                publish()
                if let start { observer.recordDuration(of: .update, since: start) }
            }
        }
        while true {
            var removed = cache.makeRemoved()
            let now = now()
            let (current, version, currentExpiry) = cache.versionedValue(forKey: key, now: now)
            var updated = current
            let result: Result
            do {
                result = try body(&updated)
            } catch {
                throw StorageError.updateAborted(by: error, key: key, storage: "MemoryStorage")
            }
            if lifetime?.hasRunOut == true { updated = nil }
            // A value that replaces a live one keeps its lifetime unless `lifetime` or the
            // rules give one; a new one gets `lifetime`, the rules' or the default.
            var expiry = Double.infinity
            if let lifetime {
                expiry = lifetime.expiry(after: now)
            } else if let rules = self.expiry, let value = updated {
                if let ruled = rules.expiry(
                    of: value,
                    forKey: key,
                    replacing: current == nil ? nil : currentExpiry,
                    now: now
                ) {
                    expiry = ruled
                } else {
                    updated = nil
                }
            } else if current != nil {
                expiry = currentExpiry
            } else if let defaultTimeToLive {
                expiry = now + defaultTimeToLive.timeInterval
            }
            let newCost = updated.map(cost)
            let committed = cache.commit(
                updated,
                forKey: key,
                ifVersion: version,
                now: now,
                cost: newCost ?? 0,
                expiry: expiry,
                removed: &removed
            )
            cache.publish(removed)
            if committed {
                if updated != nil, (newCost ?? 0) <= maximumCost { cache.publishSets([key]) }
                return result
            }
        }
    }
}

// MARK: Observing

extension MemoryStorage {
    /// Runs `body`, then publishes the statistics and the time taken: the path of every call when
    /// a logger or metrics are set.
    @usableFromInline
    func observed<Result>(
        _ operation: StorageOperation,
        _ observer: StorageObserver,
        _ body: () -> Result
    ) -> Result {
        let start = observer.measuresTime ? ContinuousClock.now : nil
        let result = body()
        observer.publish(cache.snapshot, now: now())
        if let start { observer.recordDuration(of: operation, since: start) }
        return result
    }

    /// Publishes the statistics after an operation that is not timed, if anyone observes.
    func publish() {
        guard let observer else { return }
        observer.publish(cache.snapshot, now: now())
    }
}

extension MemoryStorage: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage, ExpiringStorage,
    ObservableStorage
{}
