import _StrataInternals

/// The eviction policy's side of a ``ShardedMemoryCache``: which key each slot holds, the queue
/// that orders the slots, the totals the limits apply to and the write statistics. A pure value;
/// the cache keeps it behind one lock, taken by writes and by whoever drains the shards' reads.
@usableFromInline
struct MemoryPolicyState<Key: Hashable> {
    @usableFromInline
    struct Occupant {
        @usableFromInline var key: Key
        @usableFromInline var hash: Int
        /// The entry's expiry when the policy last wrote it. A write in the shard alone (a value
        /// of the same cost) may have moved it later since, never earlier, so the sweep checks
        /// the shard before removing an entry this says has expired. Reads may move it either way
        /// when a rule renews lifetimes on reads (``MemoryPolicyState/expiriesMoveOnRead``).
        @usableFromInline var expiry: Double

        @inlinable
        init(key: Key, hash: Int, expiry: Double) {
            self.key = key
            self.hash = hash
            self.expiry = expiry
        }
    }

    @usableFromInline var occupants: [Occupant?] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline let queue: any EvictionQueue
    @usableFromInline var count = 0
    @usableFromInline var totalCost = 0
    @usableFromInline let maximumCount: Int
    @usableFromInline let maximumCost: Int
    /// Evictions, expirations and rejections; hits, misses and writes are counted by the shards.
    @usableFromInline var statistics = StorageStatistics()
    /// Reads taken from a shard, being told to the queue; kept to reuse its capacity.
    @usableFromInline var draining: [PendingAccess] = []
    /// Whether an entry with a lifetime was ever stored: only then do writes sweep.
    @usableFromInline var hasExpiringEntries = false
    /// Whether reads may change expiries, so the sweep must read each entry's in its shard.
    @usableFromInline var expiriesMoveOnRead = false
    /// The next slot the sweep of expired entries looks at; it goes round every slot in turn.
    @usableFromInline var sweepCursor = 0

    init(maximumCount: Int, maximumCost: Int, queue: any EvictionQueue) {
        self.maximumCount = maximumCount
        self.maximumCost = maximumCost
        self.queue = queue
    }

    /// The slot the next new entry will take.
    @inlinable
    var nextSlot: Int {
        freeSlots.last ?? occupants.count
    }

    /// Gives ``nextSlot`` to `key` and tells the queue.
    @inlinable
    mutating func occupyNextSlot(key: Key, hash: Int, cost: Int, expiry: Double) {
        let occupant = Occupant(key: key, hash: hash, expiry: expiry)
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            occupants[slot] = occupant
        } else {
            slot = occupants.count
            occupants.append(occupant)
        }
        count += 1
        totalCost += cost
        if maximumCost != .max { queue.recordCost(cost, of: slot) }
        queue.recordInsertion(of: slot, hash: hash)
    }

    /// Frees `slot`, whose entry of `cost` has left its shard, and tells the queue.
    @inlinable
    mutating func release(slot: Int, cost: Int) {
        occupants[slot] = nil
        freeSlots.append(slot)
        count -= 1
        totalCost -= cost
        queue.recordRemoval(of: slot)
    }

    /// Tells the queue about the reads in ``draining``, skipping any whose slot has since been
    /// freed or given to another key, and empties it.
    @inlinable
    mutating func applyDraining() {
        // Each access touches an occupant and the queue's entries at random in a large cache:
        // start every one of those cache misses first, so that they overlap.
        occupants.withUnsafeBufferPointer { occupants in
            for access in draining where access.slot >= 0 && access.slot < occupants.count {
                prefetch(occupants.baseAddress! + access.slot)
            }
        }
        draining.withUnsafeBufferPointer { queue.prefetch($0) }
        for access in draining {
            if access.slot < 0 {
                queue.recordMiss(hash: access.hash)
            } else if access.slot < occupants.count, occupants[access.slot]?.hash == access.hash {
                queue.recordAccess(of: access.slot, hash: access.hash)
            }
        }
        draining.removeAll(keepingCapacity: true)
    }

    /// Forgets every slot; statistics are kept.
    mutating func removeAll() {
        occupants.removeAll()
        freeSlots.removeAll()
        draining.removeAll()
        queue.removeAll()
        count = 0
        totalCost = 0
        sweepCursor = 0
    }
}
