public import Foundation
import _StrataInternals

/// The async methods, which the ``Storage`` protocols call: each runs the synchronous method of
/// the same name on ``BlockingIOPool``'s threads, so the file I/O never runs on the caller's
/// actor nor holds a cooperative-pool thread.
extension DiskStorage: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage, ExpiringStorage,
    ObservableStorage
{
    /// Returns the value for `key`, or `nil` if there is none or it has expired; the file is read
    /// on Strata's I/O threads while the caller is suspended.
    ///
    /// With ``Options/readsInPlace`` (the default), a caller on no actor (a server's request
    /// handler, say) whose value the kernel already holds in memory gets it without that hop: the read is made
    /// on the caller's thread with calls that fail rather than wait for the disk (Linux's
    /// `openat2` with `RESOLVE_CACHED` and `preadv2` with `RWF_NOWAIT`), for files up to 256 KiB.
    /// Anything else (a value the disk must be read for, a caller on an actor, another platform)
    /// goes to the I/O threads.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    public func value(forKey key: String) async throws(StorageError) -> Data? {
        // Bound first: `if #isolation == nil` crashes Swift 6.3.1's code generation.
        let isolation = #isolation
        if options.readsInPlace, isolation == nil, let value = valueInPlace(forKey: key) {
            // A loop of reads that never suspend would hold its cooperative thread (one of two on
            // a small server) until it ended, keeping every other task and timer waiting; the hop
            // these reads replace suspended every time. A read in place on a thread that has gone
            // a millisecond without one yields.
            if ReadsInPlaceOnThisThread.isDueToYield() { await Task.yield() }
            return value
        }
        return try await BlockingIOPool.shared.run { () throws(StorageError) in try self.value(forKey: key) }
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has none; the files
    /// are read on several of Strata's I/O threads at once.
    ///
    /// - Throws: What the synchronous `value(forKey:)` throws, for the first key that fails.
    public func values(forKeys keys: [String]) async throws(StorageError) -> [Data?] {
        try await BlockingIOPool.shared.map(keys.count) { (range) throws(StorageError) in
            try keys[range].map { (key) throws(StorageError) in try self.value(forKey: key) }
        }
    }

    /// Stores every value in `entries` under its key with the storage's default lifetime,
    /// writing on several of Strata's I/O threads at once. A key given twice keeps the later
    /// value. A failure leaves the values written before it.
    ///
    /// - Throws: What the synchronous `set(_:forKey:)` throws, for the first entry that fails.
    public func setValues(_ entries: [(key: String, value: Data)]) async throws(StorageError) {
        try await setValues(entries, timeToLive: nil)
    }

    /// `setValues(_:)`, each value expiring after `timeToLive` (`nil` for the storage's
    /// default).
    public func setValues(_ entries: [(key: String, value: Data)], timeToLive: Duration?) async throws(StorageError) {
        // The last value for each key, so that parallel writes cannot reorder two of one key.
        var last: [String: Int] = [:]
        for (position, entry) in entries.enumerated() { last[entry.key] = position }
        let unique = entries.indices.filter { last[entries[$0].key] == $0 }.map { entries[$0] }
        _ = try await BlockingIOPool.shared.map(unique.count) { (range) throws(StorageError) -> [Void] in
            for entry in unique[range] { try self.set(entry.value, forKey: entry.key, timeToLive: timeToLive) }
            return []
        }
    }

    /// Whether `key` has a live value, read on Strata's I/O threads.
    public func containsValue(forKey key: String) async throws(StorageError) -> Bool {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.containsValue(forKey: key) }
    }

    /// Stores `value` for `key` with the storage's default lifetime, writing on Strata's I/O
    /// threads.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    public func set(_ value: Data, forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.set(value, forKey: key) }
    }

    /// Stores `value` for `key` for `timeToLive` (`nil` for no limit), writing on Strata's I/O
    /// threads.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.set(value, forKey: key, timeToLive: timeToLive)
        }
    }

    /// Removes the value for `key`, on Strata's I/O threads.
    public func removeValue(forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeValue(forKey: key) }
    }

    /// Every key with a live value, in no particular order; the folder's index is read on
    /// Strata's I/O threads.
    public func keys() async throws(StorageError) -> [String] {
        await BlockingIOPool.shared.run { self.keys() }
    }

    /// Saves a snapshot of the index (see `saveIndex()`), on Strata's I/O threads.
    public func saveIndex() async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.saveIndex() }
    }

    /// Removes every value, on Strata's I/O threads.
    public func removeAll() async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeAll() }
    }

    /// Removes every expired value and returns how many, on Strata's I/O threads.
    @discardableResult
    public func removeExpired() async throws(StorageError) -> Int {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeExpired() }
    }

    /// Reads the value for `key`, lets `body` change it, and writes the result back atomically.
    ///
    /// The file is read and written on Strata's I/O threads; `body` runs on the caller's
    /// executor, between the two, without any lock held. If another writer changed the value
    /// meanwhile, `body` runs again on the newer value.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, timeToLive: nil, body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a
    /// time to live of its own, as the synchronous method of the same name does.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a
    /// lifetime of its own, as the synchronous method of the same name does.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        let observation = beginObservation()
        defer { endObservation(.update, observation) }
        let key = try normalizedKey(key)
        return try await BlockingIOPool.shared.update(
            read: { () throws(StorageError) in try self.readForUpdate(key, lifetime: lifetime) },
            value: \.value,
            commit: { (read, value) throws(StorageError) in try self.commitUpdate(read, value: value) },
            aborted: { self.updateAborted($0, key: key) },
            body
        )
    }
}
