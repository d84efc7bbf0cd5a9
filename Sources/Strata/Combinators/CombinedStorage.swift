public import Logging

/// Two storages layered: reads try the front, then the back, pulling a back hit forward; writes
/// go to both.
///
/// Created by ``Storage/combined(with:reporting:logger:)``. Writes go to the back (the source of truth) first and
/// then to the front, so a failed back write leaves the front untouched. The front never keeps a
/// value older than the back's: a backfill that a concurrent write through this storage could
/// make stale is skipped or undone, and when two writes of one key overlap (they may reach the
/// layers in different orders) the key is removed from the front, so the next read takes the
/// back's value. A front that fails to read does not fail the read: the back answers, and the
/// front's error goes to the `reporting` closure and the logger given to
/// ``Storage/combined(with:reporting:logger:)``; when both fail, the back's error is thrown. No
/// lock is held while either layer works: a read is never delayed by a write of
/// another key, and waits only for the layers themselves. Purge the front alone through
/// ``front`` (for instance under memory pressure): the back keeps its values. Any task may use
/// it.
///
/// ```swift
/// let cache = MemoryStorage<String, City>()
///     .combined(with: MemoryStorage<String, City>())
///     .combined(with: remote)
/// ```
public struct CombinedStorage<Front: Storage, Back: Storage>: Storage
where Front.Key == Back.Key, Front.Value == Back.Value, Front.Key: Hashable {
    /// The type that names a value.
    public typealias Key = Front.Key
    /// The type of the values.
    public typealias Value = Front.Value

    /// The faster layer, read first.
    public let front: Front
    /// The slower layer, read on a front miss.
    public let back: Back
    @usableFromInline let writes: WriteTracker
    /// Hears of each front failure that a back read made up for.
    @usableFromInline let report: @Sendable (StorageError) -> Void

    @inlinable
    init(front: Front, back: Back, report: @escaping @Sendable (StorageError) -> Void) {
        self.front = front
        self.back = back
        self.writes = WriteTracker()
        self.report = report
    }

    /// Returns the front's value, or else the back's, which is then stored in the front.
    ///
    /// A failure to store the value in the front does not fail the read, nor does a failure to
    /// read it (it is reported): the back answers. When the back fails too, its error is thrown.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let ticket = writes.beginRead(of: key)
        guard let value = try await readBackAfterFront(front, back, key, report: report) else { return nil }
        guard value.fromBack else { return value.value }
        let found = value.value
        // The read succeeded; a front that cannot take the value only costs a later miss.
        await writes.backfill(since: ticket) { () throws(StorageError) in
            try await front.set(found, forKey: key)
        } remove: {
            try? await front.removeValue(forKey: key)
        }
        return found
    }

    /// Returns the values for `keys`, in the same order: the front's, read in one call, and the
    /// back's for the keys the front lacks, read in a second call and then stored in the front
    /// with the same care as ``value(forKey:)``.
    ///
    /// A front that fails to read does not fail the call (it is reported): the back answers every
    /// key. When the back fails, its error is thrown.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        let tickets = keys.map { writes.beginRead(of: $0) }
        var values: [Value?]
        var frontFailure: StorageError?
        do throws(StorageError) {
            values = try await front.values(forKeys: keys)
        } catch {
            frontFailure = error
            values = Array(repeating: nil, count: keys.count)
        }
        let missing = values.indices.filter { values[$0] == nil }
        guard !missing.isEmpty else { return values }
        let found: [Value?]
        do throws(StorageError) {
            found = try await back.values(forKeys: missing.map { keys[$0] })
        } catch {
            if let frontFailure { report(frontFailure) }
            throw error
        }
        if let frontFailure { report(frontFailure) }
        for (position, value) in zip(missing, found) {
            guard let value else { continue }
            values[position] = value
            let key = keys[position]
            await writes.backfill(since: tickets[position]) { () throws(StorageError) in
                try await front.set(value, forKey: key)
            } remove: {
                try? await front.removeValue(forKey: key)
            }
        }
        return values
    }

    /// Removes `key` from the front after writes that may have left it stale; a front that
    /// cannot remove it keeps it until its own limits or lifetime drop it.
    @inlinable
    func invalidateFront(_ key: Key) async {
        try? await front.removeValue(forKey: key)
    }

    /// Stores `value` in the back, then in the front.
    ///
    /// If the front write fails after the back write succeeded, the front's old value is removed
    /// so it cannot be read stale, and the front's error is thrown.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await writes.write(of: key) { () throws(StorageError) in
            try await back.set(value, forKey: key)
            do throws(StorageError) {
                try await front.set(value, forKey: key)
            } catch {
                try? await front.removeValue(forKey: key)
                throw error
            }
        } invalidate: {
            await invalidateFront(key)
        }
    }

    /// Stores every value in `entries` in the back in one call, then in the front in one call.
    ///
    /// When either call fails, every key of `entries` is removed from the front, so none can be
    /// read stale, and the error is thrown.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        let keys = entries.map(\.key)
        let tickets = writes.beginWrite(ofKeys: keys)
        var failure: StorageError?
        do throws(StorageError) {
            try await back.setValues(entries)
            try await front.setValues(entries)
        } catch {
            failure = error
        }
        let overlapped = writes.endWrite(tickets)
        for key in keys where failure != nil || overlapped.contains(writes.stripe(for: key)) {
            await invalidateFront(key)
        }
        if let failure { throw failure }
    }

    /// Removes the value from the back, then from the front.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await writes.write(of: key) { () throws(StorageError) in
            try await back.removeValue(forKey: key)
            try await front.removeValue(forKey: key)
        } invalidate: {
            await invalidateFront(key)
        }
    }
}

extension CombinedStorage: UpdatableStorage where Back: UpdatableStorage {
    /// Updates the back atomically, then stores the result in the front.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await writes.write(of: key) { () throws(StorageError) -> Result in
            var committed: Value?
            let result = try await back.update(forKey: key) { (value: inout Value?) throws -> Result in
                let result = try body(&value)
                committed = value
                return result
            }
            do throws(StorageError) {
                if let committed {
                    try await setFront(committed, forKey: key)
                } else {
                    try await front.removeValue(forKey: key)
                }
            } catch {
                try? await front.removeValue(forKey: key)
                throw error
            }
            return result
        } invalidate: {
            await invalidateFront(key)
        }
    }
}

extension CombinedStorage: LifetimeStorage where Front: LifetimeStorage, Back: LifetimeStorage {
    /// Stores `value` for `key` in the back, then the front, both expiring after `timeToLive`
    /// (each layer's default when `nil`); as ``set(_:forKey:)`` otherwise.
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await writes.write(of: key) { () throws(StorageError) in
            try await back.set(value, forKey: key, timeToLive: timeToLive)
            do throws(StorageError) {
                try await front.set(value, forKey: key, timeToLive: timeToLive)
            } catch {
                try? await front.removeValue(forKey: key)
                throw error
            }
        } invalidate: {
            await invalidateFront(key)
        }
    }

    /// How long the value for `key` has left in the back, which keeps every value.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await back.lifetime(forKey: key)
    }

    /// Updates `key` atomically in the back, giving the value `lifetime` (see
    /// `update(forKey:lifetime:_:)`), then stores the result in the front with
    /// the same lifetime: with `nil`, the lifetime the back kept or gave.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await writes.write(of: key) { () throws(StorageError) -> Result in
            var committed: Value?
            let result = try await back.update(forKey: key, lifetime: lifetime) {
                (value: inout Value?) throws -> Result in
                let result = try body(&value)
                committed = value
                return result
            }
            do throws(StorageError) {
                // The back's lifetime, when the update left it to the back: what it kept or gave.
                let written: Lifetime? =
                    if let lifetime { lifetime } else { try await back.lifetime(forKey: key) }
                if let committed, let written {
                    try await front.set(committed, forKey: key, lifetime: written)
                } else {
                    try await front.removeValue(forKey: key)
                }
            } catch {
                try? await front.removeValue(forKey: key)
                throw error
            }
            return result
        } invalidate: {
            await invalidateFront(key)
        }
    }
}

extension CombinedStorage: ExpiringStorage where Front: ExpiringStorage, Back: ExpiringStorage {
    /// Removes the expired values of the back, then of the front, and returns how many the back
    /// had.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        let removed = try await back.removeExpired()
        _ = try await front.removeExpired()
        return removed
    }
}

extension CombinedStorage {
    /// Stores an update's result in the front: with the lifetime it has in the back when both
    /// layers keep lifetimes (the back kept the value's, or gave a new one its default), so the
    /// front never outlives the back; with the front's own default otherwise.
    @inlinable
    func setFront(_ value: Value, forKey key: Key) async throws(StorageError) {
        guard let lifetimeBack = back as? any LifetimeStorage<Key, Value>,
            let lifetimeFront = front as? any LifetimeStorage<Key, Value>
        else {
            return try await front.set(value, forKey: key)
        }
        if let left = try await lifetimeBack.lifetime(forKey: key) {
            try await lifetimeFront.set(value, forKey: key, lifetime: left)
        } else {
            try await front.removeValue(forKey: key)
        }
    }
}

extension CombinedStorage: ClearableStorage where Front: ClearableStorage, Back: ClearableStorage {
    /// Removes every value from the back, then from the front.
    ///
    /// No read begun before it can refill the front after it, and a write of one key that
    /// overlaps it removes that key from the front when it ends.
    @inlinable
    public func removeAll() async throws(StorageError) {
        writes.beginWriteOfAll()
        defer { writes.endWriteOfAll() }
        try await back.removeAll()
        try await front.removeAll()
    }
}

extension CombinedStorage: EnumerableStorage where Back: EnumerableStorage {
    /// The back's keys: every key the combined storage can read.
    @inlinable
    public func keys() async throws(StorageError) -> [Key] {
        try await back.keys()
    }
}

extension Storage where Key: Hashable {
    /// Returns a storage that reads this storage first and `back` on a miss (keeping what it finds
    /// here), and writes both.
    ///
    /// - Parameters:
    ///   - back: The slower layer, the source of truth.
    ///   - report: Called with each error of this storage's reads that the back made up for: a
    ///     failing cache layer degrades to the layer behind it instead of failing the read.
    ///   - logger: Logs each such failure once at `.warning`, with the storage and the reason.
    @inlinable
    public func combined<Back: Storage<Key, Value>>(
        with back: Back,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> CombinedStorage<Self, Back> {
        CombinedStorage(front: self, back: back, report: loggingReports(report, to: logger, as: "CombinedStorage"))
    }
}
