import Foundation
import Logging

// Writing: set, remove, batches, update and the limits.

extension MemoryStorage {
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
