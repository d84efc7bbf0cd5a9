import Foundation
public import Logging

/// A storage in memory with optional count and cost limits, scan-resistant eviction and time to
/// live.
///
/// Reads and writes are O(1) and never hop to an actor, so a hit costs about as much as a
/// dictionary lookup. Entries live in shards by key hash, each with a lock of its own for
/// writers. A read of a live entry takes no lock: it marks a stripe of its own, which a writer of
/// that shard waits out, so reads on different cores rarely meet, and read throughput grows with
/// cores (a read that finds its entry expired, or one that renews a lifetime, takes its shard's
/// lock). The eviction policy sees every write at once and the reads in batches, as in Caffeine
/// (see <doc:ChoosingAnEvictionPolicy>). Every method is synchronous; the same methods satisfy
/// the async ``Storage`` protocols, so a `MemoryStorage` also works wherever a storage is
/// expected. Any task may use it.
///
/// ```swift
/// let cache = MemoryStorage<String, Data>(maximumCount: 1_000, maximumCost: 10_000_000)
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
    ///
    /// A limit, the time to live or the idle time of ``Expiry/afterAccess(_:)`` that is zero or
    /// negative, `timeToLive` and `expiry` given together, or a `memoryPressure` share outside 0
    /// to 1 is a programmer error: the program stops with a message that names it.
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
    ) {
        if let problem = memoryPressure.configurationProblem {
            ConfigurationRule.require(false, problem, in: "MemoryStorage")
        }
        ConfigurationRule.requireUsableLimits(
            of: "MemoryStorage",
            maximumCount: maximumCount,
            maximumCost: maximumCost,
            costName: "maximumCost",
            timeToLive: timeToLive,
            expiry: expiry
        )
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
