/// An index with an eviction queue: entries in reusable slots, an index from key to slot, and the
/// queue. A pure value with no lock; ``DiskStorage`` keeps its index of files in one, behind its
/// lock. (``MemoryStorage`` shards its entries instead: see ``ShardedMemoryCache``.)
@usableFromInline
struct CacheIndex<Key: Hashable, Value> {
    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        /// The key's hash, computed once, for the eviction queue.
        @usableFromInline var hash: Int
        /// Seconds since the reference date after which the entry reads as absent; `.infinity`
        /// for never.
        @usableFromInline var expiry: Double
        /// Changes on every write, so `update` can tell whether the entry moved under it.
        @usableFromInline var version: UInt64

        @inlinable
        init(key: Key, value: Value, cost: Int, hash: Int, expiry: Double, version: UInt64) {
            self.key = key
            self.value = value
            self.cost = cost
            self.hash = hash
            self.expiry = expiry
            self.version = version
        }
    }

    /// Values that left the cache during an operation, to be released after the lock is dropped
    /// (a value's `deinit` may run arbitrary code).
    @usableFromInline
    struct Removed {
        @usableFromInline var first: Value?
        @usableFromInline var rest: [Value] = []
        /// The removals with their keys and causes, collected only while someone listens
        /// (`nil` otherwise).
        @usableFromInline var removals: [Removal<Key, Value>]?

        @inlinable
        init() {}

        @inlinable
        mutating func append(_ value: Value) {
            if first == nil { first = value } else { rest.append(value) }
        }

        /// Appends `value`, and records why it left when someone listens.
        @inlinable
        mutating func append(_ value: Value, key: Key, cause: RemovalCause) {
            append(value)
            if removals != nil { removals?.append(Removal(key: key, value: value, cause: cause)) }
        }
    }

    @usableFromInline var slots: [Entry?] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var index: [Key: Int] = [:]
    @usableFromInline let queue: any EvictionQueue
    @usableFromInline var nextVersion: UInt64 = 1
    /// Entries removed so far; with `nextVersion`, tells whether the index changed since a time.
    @usableFromInline var removalCount: UInt64 = 0

    @usableFromInline let maximumCount: Int
    @usableFromInline let maximumCost: Int
    @usableFromInline var totalCost = 0
    @usableFromInline var statistics = StorageStatistics()
    /// Whether an entry with a lifetime was ever stored: only then do writes sweep.
    @usableFromInline var hasExpiringEntries = false
    /// The next slot the sweep of expired entries looks at; it goes round every slot in turn.
    @usableFromInline var sweepCursor = 0

    init(maximumCount: Int, maximumCost: Int, queue: any EvictionQueue) {
        self.maximumCount = maximumCount
        self.maximumCost = maximumCost
        self.queue = queue
    }

    var count: Int { index.count }

    /// Adds an entry to an index being built all at once (see ``reserveCapacity(_:)``), hashing
    /// the key twice instead of four times and leaving eviction to the caller, who evicts once at
    /// the end. Returns the value it replaced when the key was already there.
    mutating func load(_ value: Value, forKey key: Key, cost: Int, expiry: Double) -> Value? {
        guard freeSlots.isEmpty else {
            var removed = Removed()
            let previous = index[key].flatMap { slots[$0]?.value }
            set(value, forKey: key, cost: cost, expiry: expiry, removed: &removed)
            return previous
        }
        let slot = slots.count
        if let existing = index.updateValue(slot, forKey: key) {
            // A key loaded twice, which is rare: `set` replaces it.
            index[key] = existing
            let previous = slots[existing].unsafelyUnwrapped.value
            var removed = Removed()
            set(value, forKey: key, cost: cost, expiry: expiry, removed: &removed)
            return previous
        }
        let hash = key.hashValue
        slots.append(Entry(key: key, value: value, cost: cost, hash: hash, expiry: expiry, version: nextVersion))
        nextVersion &+= 1
        totalCost += cost
        if maximumCost != .max { queue.recordCost(cost, of: slot) }
        queue.recordInsertion(of: slot, hash: hash)
        if expiry != .infinity { hasExpiringEntries = true }
        return nil
    }

    /// Adds an entry to an index being built all at once (see ``reserveCapacity(_:)``) without
    /// telling the eviction queue, which ``enqueueLoaded(slot:)`` then does for each slot in
    /// recency order, oldest first. When `key` is there already, `value` takes its place only if
    /// `replacing` says so of the value there. Returns the slot that holds `value` (`nil` when it
    /// was not taken), the key's hash, and the value that lost, if any.
    mutating func loadUnqueued(
        _ value: Value,
        forKey key: Key,
        cost: Int,
        expiry: Double,
        replacing: (Value) -> Bool
    ) -> (slot: Int?, hash: Int, loser: Value?) {
        precondition(freeSlots.isEmpty, "loadUnqueued builds a new index")
        let slot = slots.count
        if expiry != .infinity { hasExpiringEntries = true }
        if let existing = index.updateValue(slot, forKey: key) {
            index[key] = existing
            let current = slots[existing].unsafelyUnwrapped
            guard replacing(current.value) else { return (nil, current.hash, value) }
            totalCost += cost - current.cost
            slots[existing] = Entry(
                key: key,
                value: value,
                cost: cost,
                hash: current.hash,
                expiry: expiry,
                version: nextVersion
            )
            nextVersion &+= 1
            return (existing, current.hash, current.value)
        }
        let hash = key.hashValue
        slots.append(Entry(key: key, value: value, cost: cost, hash: hash, expiry: expiry, version: nextVersion))
        nextVersion &+= 1
        totalCost += cost
        return (slot, hash, nil)
    }

    /// Tells the eviction queue of an entry ``loadUnqueued(_:forKey:cost:expiry:replacing:)``
    /// put in `slot`, with the hash and cost it returned (which spares reading the entry again);
    /// called once per slot, oldest first.
    mutating func enqueueLoaded(slot: Int, hash: Int, cost: Int) {
        if maximumCost != .max { queue.recordCost(cost, of: slot) }
        queue.recordInsertion(of: slot, hash: hash)
    }

    /// Makes room for `count` entries, for an index built all at once.
    mutating func reserveCapacity(_ count: Int) {
        index.reserveCapacity(count)
        slots.reserveCapacity(count)
    }

    /// Changes whenever an entry is set or removed.
    var changeStamp: UInt64 { nextVersion &+ removalCount }

    // MARK: Reading

    /// Records a use of `key` without counting a hit, and returns its value, if present.
    mutating func recordAccess(forKey key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        let entry = slots[slot].unsafelyUnwrapped
        queue.recordAccess(of: slot, hash: entry.hash)
        return entry.value
    }

    /// ``recordAccess(forKey:)`` for a caller that found `key` at `slot` in an earlier lookup:
    /// when the slot still holds the key, the key is not hashed and looked up again.
    mutating func recordAccess(forKey key: Key, slot: Int?) -> Value? {
        guard let slot, slot < slots.count, let entry = slots[slot], entry.key == key else {
            return recordAccess(forKey: key)
        }
        queue.recordAccess(of: slot, hash: entry.hash)
        return entry.value
    }

    /// Changes the value stored for `key` in place, without counting a write or changing recency.
    mutating func modifyValue(forKey key: Key, _ body: (inout Value) -> Void) {
        guard let slot = index[key], var entry = slots[slot] else { return }
        slots[slot] = nil
        body(&entry.value)
        slots[slot] = entry
    }

    /// Moves the expiry of `key`'s entry, without counting a write or changing recency.
    mutating func renew(forKey key: Key, expiry: Double) {
        guard let slot = index[key], slots[slot] != nil else { return }
        slots[slot]?.expiry = expiry
    }

    /// The expiry of `key`'s entry, if it has one, live or not.
    func expiry(forKey key: Key) -> Double? {
        index[key].flatMap { slots[$0]?.expiry }
    }

    func version(forKey key: Key, now: Double) -> UInt64 {
        guard let slot = index[key], let entry = slots[slot], entry.expiry > now else { return 0 }
        return entry.version
    }

    func liveKeys(now: Double) -> [Key] {
        index.compactMap { key, slot in slots[slot].unsafelyUnwrapped.expiry > now ? key : nil }
    }

    // MARK: Writing

    /// Stores `value`, then evicts until the limits hold. A value that alone exceeds the cost
    /// limit is not kept; it also removes the older value for `key`, which would be stale.
    ///
    /// Given `now`, a new entry also sweeps two slots for expired entries (see
    /// ``sweep(_:now:removed:)``), which go into `removed` with the evicted ones.
    @inlinable
    mutating func set(
        _ value: Value,
        forKey key: Key,
        cost: Int,
        expiry: Double,
        now: Double? = nil,
        removed: inout Removed
    ) {
        guard cost <= maximumCost else {
            statistics.rejections &+= 1
            if let slot = index[key] {
                remove(slot: slot, cause: .evictedForSize, into: &removed)
            }
            return
        }
        let version = nextVersion
        nextVersion &+= 1
        if let slot = index[key] {
            var entry = slots[slot].unsafelyUnwrapped
            slots[slot] = nil
            totalCost += cost - entry.cost
            removed.append(entry.value, key: key, cause: .replaced)
            entry.value = value
            entry.cost = cost
            entry.expiry = expiry
            entry.version = version
            slots[slot] = entry
            if maximumCost != .max { queue.recordCost(cost, of: slot) }
            queue.recordAccess(of: slot, hash: entry.hash)
        } else {
            let hash = key.hashValue
            let entry = Entry(key: key, value: value, cost: cost, hash: hash, expiry: expiry, version: version)
            let slot: Int
            if let reused = freeSlots.popLast() {
                slot = reused
                slots[slot] = entry
            } else {
                slot = slots.count
                slots.append(entry)
            }
            index[key] = slot
            totalCost += cost
            if maximumCost != .max { queue.recordCost(cost, of: slot) }
            queue.recordInsertion(of: slot, hash: hash)
            if expiry != .infinity { hasExpiringEntries = true }
            if hasExpiringEntries, let now { sweep(2, now: now, removed: &removed) }
        }
        statistics.writes &+= 1
        evict(toCount: maximumCount, toCost: maximumCost, removed: &removed)
    }

    /// Looks at the next `steps` slots of the sweep's round and removes the expired entries
    /// there. With two steps per new entry, an entry leaves at most one round after it expires,
    /// so the entries held stay within about twice those alive however many are written.
    @inlinable
    mutating func sweep(_ steps: Int, now: Double, removed: inout Removed) {
        for _ in 0..<min(steps, slots.count) {
            if sweepCursor >= slots.count { sweepCursor = 0 }
            let slot = sweepCursor
            sweepCursor += 1
            if let entry = slots[slot], entry.expiry <= now {
                remove(slot: slot, cause: .expired, into: &removed)
                statistics.expirations &+= 1
            }
        }
    }

    /// Removes the value for `key`, if any, recording `cause` as why it left.
    mutating func removeValue(forKey key: Key, cause: RemovalCause = .removed, removed: inout Removed) {
        if let slot = index[key] {
            remove(slot: slot, cause: cause, into: &removed)
        }
    }

    /// Evicts least valuable entries until at most `count` entries costing at most `cost` remain.
    @inlinable
    mutating func evict(toCount count: Int, toCost cost: Int, removed: inout Removed) {
        while index.count > count || totalCost > cost, let slot = queue.victim(excessCost: totalCost - cost) {
            let cause: RemovalCause
            if index.count > count {
                statistics.countEvictions &+= 1
                cause = .evictedForCount
            } else {
                statistics.sizeEvictions &+= 1
                cause = .evictedForSize
            }
            remove(slot: slot, cause: cause, into: &removed)
        }
    }

    /// Removes every expired entry and returns how many there were.
    mutating func removeExpired(now: Double, removed: inout Removed) -> Int {
        var expired = 0
        for slot in slots.indices {
            if let entry = slots[slot], entry.expiry <= now {
                remove(slot: slot, cause: .expired, into: &removed)
                expired += 1
            }
        }
        statistics.expirations &+= UInt64(expired)
        return expired
    }

    /// Empties the cache and returns its values, to be released outside the lock.
    mutating func removeAll() -> [Entry?] {
        let old = slots
        slots.removeAll()
        freeSlots.removeAll()
        index.removeAll()
        queue.removeAll()
        totalCost = 0
        sweepCursor = 0
        removalCount &+= UInt64(old.count)
        return old
    }

    /// Removes the entry in `slot` into `removed`, with its key and `cause`.
    @inlinable
    mutating func remove(slot: Int, cause: RemovalCause, into removed: inout Removed) {
        let key = slots[slot].unsafelyUnwrapped.key
        removed.append(remove(slot: slot), key: key, cause: cause)
    }

    @inlinable
    mutating func remove(slot: Int) -> Value {
        let entry = slots[slot].unsafelyUnwrapped
        slots[slot] = nil
        freeSlots.append(slot)
        index[entry.key] = nil
        totalCost -= entry.cost
        removalCount &+= 1
        queue.recordRemoval(of: slot)
        return entry.value
    }
}

// Unchecked because of the eviction queue, a class the state mutates in place: the state is only
// ever kept behind a lock (DiskStorage's `LockedState`) and never copied out of it, so the queue
// is reached by one thread at a time. Its keys and values must be Sendable all the same.
extension CacheIndex: @unchecked Sendable where Key: Sendable, Value: Sendable {}
