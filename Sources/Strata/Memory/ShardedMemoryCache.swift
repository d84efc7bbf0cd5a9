import Foundation
public import Synchronization
public import _StrataInternals

/// The concurrent core of ``MemoryStorage``: entries in shards by key hash, each behind its own
/// lock, and one eviction policy over all of them, behind another.
///
/// A read takes no lock (``ReadStripes``): in its thread's stripe it says which shard it is in,
/// checks that no writer holds the shard, looks the key up, then counts the hit or miss and
/// buffers the access for the policy in the stripe. A read that finds a writer in its shard (or
/// its stripe taken, an expired entry, a storage whose reads renew lifetimes) takes the shard's
/// lock instead and does the same there. When a stripe or shard has buffered
/// ``RecordedRead/drainThreshold`` reads, the reader drains every pending stripe and shard into
/// the policy if the policy's lock is free, and goes on without waiting if it is not; a full
/// buffer drops reads rather than make a reader wait. A write takes the policy's lock, drains the
/// pending reads so the policy decides on everything read so far, then takes the shard locks it
/// needs one at a time, each time raising the shard's flag and waiting for the reads in it to end.
/// Lock order: the policy, then a shard, then a stripe; no two shard locks are ever held together.
///
/// A lock, even one never contended, is a word that every reader writes: on two cores each read
/// then waits for the cache line that the other core wrote last, and two threads read fewer
/// entries per second than one (0.75-0.86 times, measured here with the buffers off). A read that
/// writes only its own stripe's lines scales as threads that share nothing.
///
/// The shards live in one allocation, each padded to its own cache lines, with the lock and the
/// writer's flag inline: a read touches its shard and the entry, and no object that another core
/// writes.
@usableFromInline
final class ShardedMemoryCache<Key: Hashable & Sendable, Value: Sendable> {
    // Sendable (below, when its keys and values are): every shard is reached only through its
    // lock (`withShard`), the policy only through `policy`'s lock, and the layout fields are set
    // once in `init`.
    @usableFromInline typealias Shard = MemoryShard<Key, Value>
    @usableFromInline typealias Entry = Shard.Entry
    @usableFromInline typealias Policy = MemoryPolicyState<Key>
    @usableFromInline typealias Removed = CacheIndex<Key, Value>.Removed

    /// The first shard; shard `i` starts `i * stride` bytes later with its lock, and its
    /// ``MemoryShard`` follows at `shardOffset`.
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let stride: Int
    @usableFromInline let shardOffset: Int
    /// Where a shard's writer flag (an `Atomic<Int>`, nonzero while a writer holds the shard)
    /// follows its lock.
    @usableFromInline let flagOffset: Int
    /// Where lock-free reads leave their counts and accesses.
    @usableFromInline let stripes: ReadStripes
    /// The number of shards minus one; the count is a power of two.
    @usableFromInline let mask: Int
    @usableFromInline let policy: LockedState<Policy>
    /// Bit `i` is set when shard `i` may hold reads the policy has not seen.
    @usableFromInline let pendingShards = LockedState<UInt64>(0)
    /// Who listens to removals; every change that removes values collects them only while
    /// someone does.
    @usableFromInline let removals = RemovalBroadcast<Key, Value>()
    /// Who listens to changes (`changes()`): removals are collected for them too, and writes
    /// report their sets.
    @usableFromInline let changes = Broadcast<StorageChange<Key>>()
    /// The idle time, in seconds, that a read renews an entry's lifetime to, or 0 when reads
    /// leave lifetimes alone (``Expiry/afterAccess(_:)``).
    @usableFromInline let idleTime: Double

    /// Four shards per core, a power of two from 4 to 64: two readers rarely meet on one lock.
    static var defaultShardCount: Int {
        let wanted = min(max(4 * ProcessInfo.processInfo.activeProcessorCount, 4), 64)
        var count = 4
        while count < wanted { count *= 2 }
        return count
    }

    /// Creates an empty cache. `idleTime` (seconds, 0 for none) renews an entry's lifetime on
    /// every read; `readsChangeLifetimes` says whether reads may change lifetimes at all (an idle
    /// time, or a rule the storage applies through ``renew(forKey:version:expiry:)``), so that
    /// the sweep does not trust the policy's copy of an expiry.
    init(
        maximumCount: Int,
        maximumCost: Int,
        queue: any EvictionQueue,
        idleTime: Double = 0,
        readsChangeLifetimes: Bool = false,
        shardCount: Int = defaultShardCount
    ) {
        precondition(shardCount > 0 && shardCount <= 64 && shardCount & (shardCount - 1) == 0)
        self.idleTime = idleTime
        let lockSize = PlatformMutex.size
        let alignment = max(MemoryLayout<Shard>.alignment, PlatformMutex.alignment)
        let cacheLine = 128
        shardOffset = (lockSize + alignment - 1) / alignment * alignment
        let flagAlignment = MemoryLayout<Atomic<Int>>.alignment
        flagOffset = (shardOffset + MemoryLayout<Shard>.size + flagAlignment - 1) / flagAlignment * flagAlignment
        stride = (flagOffset + MemoryLayout<Atomic<Int>>.size + cacheLine - 1) / cacheLine * cacheLine
        mask = shardCount - 1
        base = UnsafeMutableRawPointer.allocate(byteCount: stride * shardCount, alignment: cacheLine)
        for index in 0..<shardCount {
            let cell = base + index * stride
            PlatformMutex.initialize(cell)
            (cell + shardOffset).bindMemory(to: Shard.self, capacity: 1).initialize(to: Shard())
            (cell + flagOffset).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        }
        stripes = ReadStripes(count: shardCount)
        var state = Policy(maximumCount: maximumCount, maximumCost: maximumCost, queue: queue)
        if readsChangeLifetimes || idleTime > 0 {
            state.hasExpiringEntries = true
            state.expiriesMoveOnRead = true
        }
        policy = LockedState(state)
    }

    deinit {
        for index in 0...mask {
            let cell = base + index * stride
            (cell + shardOffset).assumingMemoryBound(to: Shard.self).deinitialize(count: 1)
            (cell + flagOffset).assumingMemoryBound(to: Atomic<Int>.self).deinitialize(count: 1)
            PlatformMutex.destroy(cell)
        }
        base.deallocate()
    }

    /// A collector of the values an operation removes, which also records their keys and causes
    /// while someone listens.
    @inlinable
    func makeRemoved() -> Removed {
        var removed = Removed()
        if removals.isActive || changes.isActive { removed.removals = [] }
        return removed
    }

    /// Hands what `removed` recorded to the listeners. Call it with no lock held.
    @inlinable
    func publish(_ removed: borrowing Removed) {
        guard let recorded = removed.removals else { return }
        if removals.isActive { removals.publish(recorded) }
        if changes.isActive {
            changes.publish(
                recorded.compactMap { removal in
                    StorageChange.Kind(removal.cause).map { StorageChange(key: removal.key, kind: $0) }
                }
            )
        }
    }

    /// Tells the change listeners that `keys` were set, if any listen. Call it with no lock held.
    @inlinable
    func publishSets(_ keys: @autoclosure () -> [Key]) {
        if changes.isActive { changes.publish(keys().map { StorageChange(key: $0, kind: .set) }) }
    }

    @inlinable
    func shardIndex(ofHash hash: Int) -> Int {
        // The high bits: a shard's dictionary and the policy's sketch use the low ones.
        Int(truncatingIfNeeded: UInt(bitPattern: hash) &>> (UInt.bitWidth - 6)) & mask
    }

    /// Runs `body` on shard `index` with its lock held and its flag raised, once no lock-free read
    /// is in it.
    @inlinable
    func withShard<Result>(_ index: Int, _ body: (inout Shard) -> Result) -> Result {
        let cell = base + index &* stride
        let flag = (cell + flagOffset).assumingMemoryBound(to: Atomic<Int>.self)
        PlatformMutex.lock(cell)
        flag.pointee.store(1, ordering: .sequentiallyConsistent)
        stripes.waitForReads(inShard: index)
        let result = body(&(cell + shardOffset).assumingMemoryBound(to: Shard.self).pointee)
        flag.pointee.store(0, ordering: .releasing)
        PlatformMutex.unlock(cell)
        return result
    }

    /// The entry for `key` read without a lock, counted and buffered in the calling thread's
    /// stripe: `.some(nil)` for a miss, `nil` when the read must take the shard's lock instead (a
    /// writer in the shard, both stripes tried taken, an expired entry, reads that renew
    /// lifetimes).
    @inlinable @inline(__always)
    func entryWithoutLock(
        forKey key: Key,
        hash: Int,
        shard index: Int,
        now: () -> Double
    ) -> (value: Value, version: UInt64, expiry: Double)?? {
        guard idleTime == 0, let stripe = stripes.enter(shard: index) else { return nil }
        let cell = base + index &* stride
        guard
            (cell + flagOffset).assumingMemoryBound(to: Atomic<Int>.self).pointee.load(
                ordering: .sequentiallyConsistent
            ) == 0
        else {
            stripes.release(stripe)
            return nil
        }
        let fields = stripes.fields(stripe)
        let access: PendingAccess
        let found: (value: Value, version: UInt64, expiry: Double)?
        if let entry = (cell + shardOffset).assumingMemoryBound(to: Shard.self).pointee.entries[
            HashedKey(key, hash: hash)
        ] {
            if entry.expiry != .infinity, entry.expiry <= now() {
                stripes.release(stripe)
                return nil
            }
            fields.pointee.hits &+= 1
            access = PendingAccess(slot: entry.slot, hash: hash)
            found = (entry.value, entry.version, entry.expiry)
        } else {
            fields.pointee.misses &+= 1
            access = PendingAccess(slot: -1, hash: hash)
            found = nil
        }
        let recorded = RecordedRead.record(access, in: &fields.pointee.pending)
        stripes.release(stripe)
        switch recorded {
        case .buffered: break
        case .first: stripes.markPending(stripe)
        case .drainable: drainIfAvailable()
        }
        return .some(found)
    }

    // MARK: Reading

    /// Returns the live value for `key`, counting a hit or a miss. An expired entry reads as a
    /// miss and is removed.
    @inlinable @inline(__always)
    func value(forKey key: Key, now: () -> Double) -> Value? {
        entry(forKey: key, now: now)?.value
    }

    /// Returns the live value for `key` with its version and expiry (after the idle time renewed
    /// it), counting a hit or a miss. An expired entry reads as a miss and is removed.
    @inlinable @inline(__always)
    func entry(forKey key: Key, now: () -> Double) -> (value: Value, version: UInt64, expiry: Double)? {
        let hash = key.hashValue
        let index = shardIndex(ofHash: hash)
        if let answer = entryWithoutLock(forKey: key, hash: hash, shard: index, now: now) { return answer }
        var expiredVersion: UInt64 = 0
        var drain = false
        let found: (value: Value, version: UInt64, expiry: Double)? = withShard(index) { shard in
            let access: PendingAccess
            let found: (value: Value, version: UInt64, expiry: Double)?
            if let entry = shard.entries[HashedKey(key, hash: hash)] {
                var expiry = entry.expiry
                if expiry != .infinity {
                    let current = now()
                    if expiry <= current {
                        shard.misses &+= 1
                        expiredVersion = entry.version
                        return nil
                    }
                    if idleTime > 0 {
                        expiry = current + idleTime
                        shard.renew(HashedKey(key, hash: hash), expiry: expiry)
                    }
                }
                shard.hits &+= 1
                access = PendingAccess(slot: entry.slot, hash: hash)
                found = (entry.value, entry.version, expiry)
            } else {
                shard.misses &+= 1
                access = PendingAccess(slot: -1, hash: hash)
                found = nil
            }
            switch shard.record(access) {
            case .buffered: break
            case .first: markPending(index)
            case .drainable: drain = true
            }
            return found
        }
        if expiredVersion != 0 {
            removeExpired(forKey: key, hash: hash, version: expiredVersion)
        } else if drain {
            drainIfAvailable()
        }
        return found
    }

    /// Gives the entry for `key` a new expiry if it still has `version`: a lifetime that a rule
    /// worked out after a read. Not a write: the version stays.
    func renew(forKey key: Key, version: UInt64, expiry: Double) {
        let hash = key.hashValue
        withShard(shardIndex(ofHash: hash)) { shard in
            guard let position = shard.entries.index(forKey: HashedKey(key, hash: hash)),
                shard.entries.values[position].version == version
            else { return }
            shard.entries.values[position].expiry = expiry
        }
    }

    /// Returns the live values for `keys`, in their order, counting a hit or a miss for each:
    /// the keys are grouped by shard, and each shard's lock is taken once for all of its keys.
    @inlinable
    func values(forKeys keys: [Key], now: () -> Double) -> [Value?] {
        let shardCount = mask &+ 1
        var hashes: [Int] = []
        hashes.reserveCapacity(keys.count)
        // A counting sort of the positions by shard: `bounds[i]..<bounds[i + 1]` in `order` are
        // the positions of shard `i`'s keys.
        var bounds = [Int](repeating: 0, count: shardCount &+ 1)
        for key in keys {
            let hash = key.hashValue
            hashes.append(hash)
            bounds[shardIndex(ofHash: hash) &+ 1] &+= 1
        }
        for index in 0..<shardCount { bounds[index &+ 1] &+= bounds[index] }
        var next = bounds
        var order = [Int](repeating: 0, count: keys.count)
        for position in keys.indices {
            let index = shardIndex(ofHash: hashes[position])
            order[next[index]] = position
            next[index] &+= 1
        }
        var values = [Value?](repeating: nil, count: keys.count)
        var expired: [(position: Int, version: UInt64)] = []
        var drain = false
        var time: Double?
        for index in 0..<shardCount where bounds[index] < bounds[index &+ 1] {
            withShard(index) { shard in
                for position in order[bounds[index]..<bounds[index &+ 1]] {
                    let hash = hashes[position]
                    let access: PendingAccess
                    if let entry = shard.entries[HashedKey(keys[position], hash: hash)] {
                        if entry.expiry != .infinity {
                            let current = time ?? now()
                            time = current
                            if entry.expiry <= current {
                                shard.misses &+= 1
                                expired.append((position, entry.version))
                                continue
                            }
                            if idleTime > 0 {
                                shard.renew(HashedKey(keys[position], hash: hash), expiry: current + idleTime)
                            }
                        }
                        shard.hits &+= 1
                        access = PendingAccess(slot: entry.slot, hash: hash)
                        values[position] = entry.value
                    } else {
                        shard.misses &+= 1
                        access = PendingAccess(slot: -1, hash: hash)
                    }
                    switch shard.record(access) {
                    case .buffered: break
                    case .first: markPending(index)
                    case .drainable: drain = true
                    }
                }
            }
        }
        for (position, version) in expired {
            removeExpired(forKey: keys[position], hash: hashes[position], version: version)
        }
        if drain { drainIfAvailable() }
        return values
    }

    /// Stores every entry under the policy's lock, taken once, in order, evicting after each as
    /// `set` does; an entry whose expiry is `nil` (its lifetime has run out) removes its key.
    @inlinable
    func setValues(
        _ entries: [(key: Key, value: Value)],
        costs: [Int],
        expiries: [Double?],
        now: () -> Double,
        removed: inout Removed
    ) {
        policy.withLock { policy in
            drainPending(&policy)
            for (position, entry) in entries.enumerated() {
                guard let expiry = expiries[position] else {
                    remove(entry.key, hash: entry.key.hashValue, from: &policy, removed: &removed)
                    continue
                }
                store(
                    entry.value,
                    forKey: entry.key,
                    hash: entry.key.hashValue,
                    cost: costs[position],
                    expiry: expiry,
                    now: now,
                    in: &policy,
                    removed: &removed
                )
            }
        }
    }

    /// Returns the live value, its version (0 when absent) and its expiry without counting a
    /// hit or a miss.
    func versionedValue(forKey key: Key, now: Double) -> (value: Value?, version: UInt64, expiry: Double) {
        let hash = key.hashValue
        let found = withShard(shardIndex(ofHash: hash)) { $0.entries[HashedKey(key, hash: hash)] }
        guard let found else { return (nil, 0, .infinity) }
        guard found.expiry > now else {
            removeExpired(forKey: key, hash: hash, version: found.version)
            return (nil, 0, .infinity)
        }
        return (found.value, found.version, found.expiry)
    }

    /// Whether a live value is stored for `key`; not counted as a use.
    func containsValue(forKey key: Key, now: Double) -> Bool {
        let hash = key.hashValue
        return withShard(shardIndex(ofHash: hash)) {
            $0.entries[HashedKey(key, hash: hash)].map { $0.expiry > now } ?? false
        }
    }

    func liveKeys(now: Double) -> [Key] {
        var keys: [Key] = []
        for index in 0...mask {
            withShard(index) { shard in
                for (key, entry) in shard.entries where entry.expiry > now {
                    keys.append(key.key)
                }
            }
        }
        return keys
    }

    var count: Int {
        policy.withLock { $0.count }
    }

    var totalCost: Int {
        policy.withLock { $0.totalCost }
    }

    /// The statistics, with the entries and cost held now.
    var snapshot: StorageStatistics {
        policy.withLock { policy in
            var snapshot = policy.statistics
            snapshot.count = policy.count
            snapshot.totalCost = policy.totalCost
            for index in 0...mask {
                withShard(index) { shard in
                    snapshot.hits &+= shard.hits
                    snapshot.misses &+= shard.misses
                    snapshot.writes &+= shard.writes
                }
            }
            for index in 0...stripes.mask {
                stripes.withStripe(index) { stripe in
                    snapshot.hits &+= stripe.hits
                    snapshot.misses &+= stripe.misses
                }
            }
            return snapshot
        }
    }

    // MARK: Telling the policy about reads

    @inlinable
    func markPending(_ index: Int) {
        pendingShards.withLock { $0 |= 1 &<< UInt64(index) }
    }

    /// Drains the pending reads into the policy if no one holds it; never waits.
    @inlinable
    func drainIfAvailable() {
        _ = policy.withLockIfAvailable { drainPending(&$0) }
    }

    /// Tells the policy about every read buffered in a pending shard. Called with the policy held.
    @inlinable
    func drainPending(_ policy: inout Policy) {
        var pending = pendingShards.withLock { bits in
            defer { bits = 0 }
            return bits
        }
        while pending != 0 {
            let index = pending.trailingZeroBitCount
            pending &= pending &- 1
            withShard(index) { swap(&$0.pending, &policy.draining) }
            policy.applyDraining()
        }
        var pendingStripes = stripes.takePending()
        while pendingStripes != 0 {
            let index = pendingStripes.trailingZeroBitCount
            pendingStripes &= pendingStripes &- 1
            stripes.withStripe(index) { swap(&$0.pending, &policy.draining) }
            policy.applyDraining()
        }
    }
}

extension ShardedMemoryCache: @unchecked Sendable {}
