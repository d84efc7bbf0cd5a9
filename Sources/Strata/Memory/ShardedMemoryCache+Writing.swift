import Foundation
import Synchronization
public import _StrataInternals

extension ShardedMemoryCache {
    // MARK: Writing

    /// Stores `value`, then evicts until the limits hold. A value that alone exceeds the cost
    /// limit is not kept; it also removes the older value for `key`, which would be stale.
    @inlinable
    func set(_ value: Value, forKey key: Key, cost: Int, expiry: Double, now: () -> Double, removed: inout Removed) {
        let hash = key.hashValue
        let index = shardIndex(ofHash: hash)
        // A value replacing one of the same cost changes nothing the limits count: it is written
        // in its shard alone, and the policy hears of it later, as of a read.
        var drain = false
        let replaced = withShard(index) { shard in
            // An expiry moved earlier goes through the policy, whose copy the sweep trusts.
            guard let position = shard.entries.index(forKey: HashedKey(key, hash: hash)),
                shard.entries.values[position].cost == cost,
                shard.entries.values[position].expiry <= expiry
            else {
                return false
            }
            let slot = shard.entries.values[position].slot
            let old = shard.entries.values[position].value
            shard.entries.values[position] = Entry(
                value: value,
                cost: cost,
                expiry: expiry,
                version: shard.takeVersion(),
                slot: slot
            )
            removed.append(old, key: key, cause: .replaced)
            shard.writes &+= 1
            // In the thread's stripe if it is free: the shard's buffer would make the next
            // write to mark it pending, and the drain, wait for lines another core wrote.
            let access = PendingAccess(slot: slot, hash: hash)
            if let recorded = stripes.record(access) {
                drain = recorded == .drainable
            } else {
                switch shard.record(access) {
                case .buffered: break
                case .first: markPending(index)
                case .drainable: drain = true
                }
            }
            return true
        }
        if replaced {
            if drain { drainIfAvailable() }
            return
        }
        policy.withLock { policy in
            drainPending(&policy)
            store(value, forKey: key, hash: hash, cost: cost, expiry: expiry, now: now, in: &policy, removed: &removed)
        }
    }

    /// Writes `updated` (or removes the value when `nil`) if the entry for `key` still has
    /// `version` (0: absent) at `now`; returns whether it did.
    func commit(
        _ updated: Value?,
        forKey key: Key,
        ifVersion version: UInt64,
        now: Double,
        cost: Int,
        expiry: Double,
        removed: inout Removed
    ) -> Bool {
        let hash = key.hashValue
        let index = shardIndex(ofHash: hash)
        return policy.withLock { policy in
            let current = withShard(index) { shard in
                shard.entries[HashedKey(key, hash: hash)].map { $0.expiry > now ? $0.version : 0 } ?? 0
            }
            guard current == version else { return false }
            drainPending(&policy)
            if let updated {
                store(
                    updated,
                    forKey: key,
                    hash: hash,
                    cost: cost,
                    expiry: expiry,
                    now: { now },
                    in: &policy,
                    removed: &removed
                )
            } else {
                remove(key, hash: hash, from: &policy, removed: &removed)
            }
            return true
        }
    }

    func removeValue(forKey key: Key, removed: inout Removed) {
        let hash = key.hashValue
        policy.withLock { remove(key, hash: hash, from: &$0, removed: &removed) }
    }

    /// Evicts in the policy's order until at most `count` entries costing at most `cost` remain.
    func evict(toCount count: Int, toCost cost: Int, removed: inout Removed) {
        policy.withLock { policy in
            drainPending(&policy)
            evict(toCount: count, toCost: cost, from: &policy, removed: &removed)
        }
    }

    /// Evicts in the policy's order until at most `share` (0 to 1) of the entries and of the cost
    /// held now remain, counting each as a pressure eviction.
    func evictForMemoryPressure(keeping share: Double, removed: inout Removed) {
        policy.withLock { policy in
            drainPending(&policy)
            let count = Int((Double(policy.count) * share).rounded(.down))
            let cost = Int((Double(policy.totalCost) * share).rounded(.down))
            evict(toCount: count, toCost: cost, from: &policy, removed: &removed, forMemoryPressure: true)
        }
    }

    /// Removes every expired entry and returns how many there were.
    func removeExpired(now: Double, removed: inout Removed) -> Int {
        policy.withLock { policy in
            var expired = 0
            for index in 0...mask {
                withShard(index) { shard in
                    let keys = shard.entries.compactMap { $0.value.expiry <= now ? $0.key : nil }
                    for key in keys {
                        guard let entry = shard.entries.removeValue(forKey: key) else { continue }
                        removed.append(entry.value, key: key.key, cause: .expired)
                        policy.release(slot: entry.slot, cost: entry.cost)
                    }
                    expired += keys.count
                }
            }
            policy.statistics.expirations &+= UInt64(expired)
            return expired
        }
    }

    /// Empties the cache and returns the shards' old entries, to be released outside the locks.
    /// Statistics are kept.
    func removeAll() -> [[HashedKey<Key>: Entry]] {
        policy.withLock { policy in
            var old: [[HashedKey<Key>: Entry]] = []
            old.reserveCapacity(mask + 1)
            for index in 0...mask {
                withShard(index) { shard in
                    var entries: [HashedKey<Key>: Entry] = [:]
                    swap(&entries, &shard.entries)
                    old.append(entries)
                    shard.pending.removeAll()
                }
            }
            pendingShards.withLock { $0 = 0 }
            for index in 0...stripes.mask {
                stripes.withStripe(index) { $0.pending.removeAll() }
            }
            _ = stripes.takePending()
            policy.removeAll()
            return old
        }
    }

    // MARK: Under the policy's lock

    @inlinable
    func store(
        _ value: Value,
        forKey key: Key,
        hash: Int,
        cost: Int,
        expiry: Double,
        now: () -> Double,
        in policy: inout Policy,
        removed: inout Removed
    ) {
        guard cost <= policy.maximumCost else {
            policy.statistics.rejections &+= 1
            remove(key, hash: hash, from: &policy, removed: &removed, cause: .evictedForSize)
            return
        }
        let fresh = policy.nextSlot
        let previous: (slot: Int, cost: Int)? = withShard(shardIndex(ofHash: hash)) { shard in
            let version = shard.takeVersion()
            shard.writes &+= 1
            if let position = shard.entries.index(forKey: HashedKey(key, hash: hash)) {
                let old = shard.entries.values[position]
                shard.entries.values[position] = Entry(
                    value: value,
                    cost: cost,
                    expiry: expiry,
                    version: version,
                    slot: old.slot
                )
                removed.append(old.value, key: key, cause: .replaced)
                return (old.slot, old.cost)
            }
            shard.entries[HashedKey(key, hash: hash)] = Entry(
                value: value,
                cost: cost,
                expiry: expiry,
                version: version,
                slot: fresh
            )
            return nil
        }
        if let previous {
            policy.totalCost += cost - previous.cost
            policy.occupants[previous.slot]?.expiry = expiry
            if policy.maximumCost != .max { policy.queue.recordCost(cost, of: previous.slot) }
            policy.queue.recordAccess(of: previous.slot, hash: hash)
        } else {
            policy.occupyNextSlot(key: key, hash: hash, cost: cost, expiry: expiry)
            if expiry != .infinity { policy.hasExpiringEntries = true }
            // Each new entry pays for looking at two others, so expired entries leave without
            // being read and before a limit evicts live ones.
            if policy.hasExpiringEntries { sweep(2, now: now(), in: &policy, removed: &removed) }
        }
        evict(toCount: policy.maximumCount, toCost: policy.maximumCost, from: &policy, removed: &removed)
    }

    /// Looks at the next `steps` slots of the sweep's round and removes the expired entries
    /// there. A round covers every slot once per that many new entries, so, with two steps per new
    /// entry, an entry leaves at most one round after it expires: the entries held stay within
    /// about twice those alive, however many are written and never read again.
    @inlinable
    func sweep(_ steps: Int, now: Double, in policy: inout Policy, removed: inout Removed) {
        let slots = policy.occupants.count
        for _ in 0..<min(steps, slots) {
            if policy.sweepCursor >= slots { policy.sweepCursor = 0 }
            let slot = policy.sweepCursor
            policy.sweepCursor += 1
            // The policy's copy of the expiry first: most entries it names are alive, and this
            // needs no shard lock. When reads move expiries, the copy may be later than the
            // entry's, so the shard is asked every time.
            guard let occupant = policy.occupants[slot], policy.expiriesMoveOnRead || occupant.expiry <= now else {
                continue
            }
            var alive = occupant.expiry
            let expired = withShard(shardIndex(ofHash: occupant.hash)) { shard -> Entry? in
                let key = HashedKey(occupant.key, hash: occupant.hash)
                guard let entry = shard.entries[key], entry.slot == slot else { return nil }
                guard entry.expiry <= now else {
                    alive = entry.expiry
                    return nil
                }
                return shard.entries.removeValue(forKey: key)
            }
            guard let expired else {
                policy.occupants[slot]?.expiry = alive
                continue
            }
            removed.append(expired.value, key: occupant.key, cause: .expired)
            policy.release(slot: slot, cost: expired.cost)
            policy.statistics.expirations &+= 1
        }
    }

    @inlinable
    func remove(
        _ key: Key,
        hash: Int,
        from policy: inout Policy,
        removed: inout Removed,
        cause: RemovalCause = .removed
    ) {
        guard
            let entry = withShard(
                shardIndex(ofHash: hash),
                { $0.entries.removeValue(forKey: HashedKey(key, hash: hash)) }
            )
        else { return }
        removed.append(entry.value, key: key, cause: cause)
        policy.release(slot: entry.slot, cost: entry.cost)
    }

    @inlinable
    func evict(
        toCount count: Int,
        toCost cost: Int,
        from policy: inout Policy,
        removed: inout Removed,
        forMemoryPressure: Bool = false
    ) {
        while policy.count > count || policy.totalCost > cost,
            let slot = policy.queue.victim(excessCost: policy.totalCost - cost)
        {
            guard let occupant = policy.occupants[slot] else {
                preconditionFailure("the eviction queue named slot \(slot), which holds no entry")
            }
            let cause: RemovalCause
            if forMemoryPressure {
                policy.statistics.pressureEvictions &+= 1
                cause = .evictedForMemoryPressure
            } else if policy.count > count {
                policy.statistics.countEvictions &+= 1
                cause = .evictedForCount
            } else {
                policy.statistics.sizeEvictions &+= 1
                cause = .evictedForSize
            }
            let index = shardIndex(ofHash: occupant.hash)
            let key = HashedKey(occupant.key, hash: occupant.hash)
            guard let entry = withShard(index, { $0.entries.removeValue(forKey: key) }) else {
                preconditionFailure("slot \(slot)'s key is missing from its shard")
            }
            removed.append(entry.value, key: occupant.key, cause: cause)
            policy.release(slot: slot, cost: entry.cost)
        }
    }

    /// Removes the entry for `key` if it is still the expired one a read found.
    @inlinable
    func removeExpired(forKey key: Key, hash: Int, version: UInt64) {
        var removed = makeRemoved()
        policy.withLock { policy in
            let entry = withShard(shardIndex(ofHash: hash)) { shard -> Entry? in
                let key = HashedKey(key, hash: hash)
                guard shard.entries[key]?.version == version else { return nil }
                return shard.entries.removeValue(forKey: key)
            }
            guard let entry else { return }
            removed.append(entry.value, key: key, cause: .expired)
            policy.release(slot: entry.slot, cost: entry.cost)
            policy.statistics.expirations &+= 1
        }
        publish(removed)
        _ = consume removed
    }
}
