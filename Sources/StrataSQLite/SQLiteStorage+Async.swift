public import Foundation
import GRDB
public import Strata
import _StrataInternals

/// The async methods, which the `Storage` protocols call: each runs the synchronous method of
/// the same name on Strata's I/O threads, so SQLite's I/O (and a write's wait for the busy
/// timeout) never runs on the caller's actor nor holds a cooperative-pool thread.
extension SQLiteStorage: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage, ExpiringStorage,
    ObservableStorage
{
    /// Returns the value for `key`, or `nil` if there is none or it has expired; read on Strata's
    /// I/O threads while the caller is suspended.
    ///
    /// - Throws: What the synchronous method of the same name throws.
    public func value(forKey key: String) async throws(StorageError) -> Data? {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.value(forKey: key) }
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has none, in one read
    /// transaction on Strata's I/O threads.
    public func values(forKeys keys: [String]) async throws(StorageError) -> [Data?] {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.values(forKeys: keys) }
    }

    /// Whether `key` has a live value, read on Strata's I/O threads.
    public func containsValue(forKey key: String) async throws(StorageError) -> Bool {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.containsValue(forKey: key) }
    }

    /// Every key with a live value, in no particular order, read on Strata's I/O threads.
    public func keys() async throws(StorageError) -> [String] {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.keys() }
    }

    /// What this storage holds and has counted, read on Strata's I/O threads.
    public func statistics() async throws(StorageError) -> StorageStatistics {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.statistics() }
    }

    /// Stores `value` for `key` with the storage's default lifetime, on Strata's I/O threads.
    public func set(_ value: Data, forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.set(value, forKey: key) }
    }

    /// Stores `value` for `key` for `timeToLive` (`nil` for the storage's default), on Strata's
    /// I/O threads.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.set(value, forKey: key, timeToLive: timeToLive)
        }
    }

    /// Stores every value in one transaction, on Strata's I/O threads.
    public func setValues(_ values: [String: Data], timeToLive: Duration? = nil) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.setValues(values, timeToLive: timeToLive)
        }
    }

    /// Stores every value in `entries` with the storage's default lifetime, in one transaction
    /// on Strata's I/O threads: all are written or none. A key given twice keeps the later value.
    public func setValues(_ entries: [(key: String, value: Data)]) async throws(StorageError) {
        let values = Dictionary(entries, uniquingKeysWith: { _, later in later })
        try await setValues(values, timeToLive: nil)
    }

    /// Removes the value for `key`, on Strata's I/O threads.
    public func removeValue(forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeValue(forKey: key) }
    }

    /// Removes the values of `keys` in one transaction, on Strata's I/O threads.
    public func removeValues(forKeys keys: [String]) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeValues(forKeys: keys) }
    }

    /// Removes every value, on Strata's I/O threads.
    public func removeAll() async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeAll() }
    }

    /// How long the value for `key` has left, read on Strata's I/O threads.
    public func lifetime(forKey key: String) async throws(StorageError) -> Lifetime? {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.lifetime(forKey: key) }
    }

    /// Removes every expired value and returns how many, on Strata's I/O threads.
    @discardableResult
    public func removeExpired() async throws(StorageError) -> Int {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeExpired() }
    }

    /// Reads the value for `key`, lets `body` change it, and writes the result back atomically
    /// across threads and processes.
    ///
    /// The row is read, and later written in a write transaction, on Strata's I/O threads;
    /// `body` runs on the caller's executor in between, with no transaction open, so a slow
    /// `body` keeps no other writer waiting. If the row changed meanwhile (another thread or
    /// process wrote it), nothing is written and `body` runs again on the newer value, so it
    /// should have no side effects. The synchronous method of the same name runs `body` once,
    /// inside the transaction.
    ///
    /// - Throws: `StorageError.Code.updateAborted` when `body` throws (nothing is written), or
    ///   what the synchronous method of the same name throws.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, timeToLive: nil, body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a time to live of its own, as the
    /// synchronous method of the same name does; `body` runs as the other async update's does.
    ///
    /// - Throws: as the other async update.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a lifetime of its own, as the
    /// synchronous method of the same name does; `body` runs as the other async update's does.
    ///
    /// - Throws: as the other async update.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        let key = normalizedKey(key)
        let name = name
        return try await BlockingIOPool.shared.update(
            read: { () throws(StorageError) in try self.readForUpdate(key, lifetime: lifetime) },
            value: \.value,
            commit: { (read, value) throws(StorageError) in try self.commitUpdate(read, value: value) },
            aborted: { error in
                StorageError.updateAborted(by: error, key: key, storage: name)
            },
            body
        )
    }
}

extension SQLiteStorage {
    /// What an async update read: the row as it was, to check nobody changed it before the write.
    struct UpdateRead: Sendable {
        var key: String
        var row: StoredRow?
        var now: Double
        var lifetime: Lifetime?
        var value: Data?
    }

    /// A row's contents as compared by an update.
    struct StoredRow: Equatable, Sendable {
        var value: StoredValue
        var expiry: Double?
    }

    /// The first half of an async update: reads `key`'s row and its live value; the second half
    /// gives the written value `lifetime` when there is one.
    func readForUpdate(_ key: String, lifetime: Lifetime?) throws(StorageError) -> UpdateRead {
        let now = now()
        let row: StoredRow?
        do {
            row = try pool.read { db in try readRow(db, key: key).map { StoredRow(value: $0.value, expiry: $0.expiry) }
            }
        } catch {
            throw mapError(error, key: key, "cannot update")
        }
        let value = try row.flatMap { row throws(StorageError) -> Data? in
            guard row.expiry.map({ $0 > now }) ?? true else { return nil }
            return try data(row.value, key: key)
        }
        return UpdateRead(key: key, row: row, now: now, lifetime: lifetime, value: value)
    }

    /// The second half of an async update: in one write transaction, writes `value` (or removes
    /// the row for `nil`) if the row is still the one `read` saw; `false` when it changed.
    func commitUpdate(_ read: UpdateRead, value: Data?) throws(StorageError) -> Bool {
        let key = read.key
        var outcome: (committed: Bool, wrote: Bool) = (false, false)
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    changes.removeAll()
                    let current = try readRow(db, key: key).map { StoredRow(value: $0.value, expiry: $0.expiry) }
                    guard current == read.row else { return .rollback }
                    let wrote = try writeUpdated(
                        db,
                        key: key,
                        value: value,
                        hadValue: current != nil,
                        liveExpiry: read.value != nil ? .some(read.row?.expiry) : nil,
                        lifetime: read.lifetime,
                        now: read.now,
                        reporting: listening,
                        into: &changes
                    )
                    outcome = (true, wrote)
                    return .commit
                }
            }
        } catch {
            throw mapError(error, key: key, "cannot update")
        }
        if outcome.wrote { counters.count { $0.writes &+= 1 } }
        if listening, outcome.committed { changeListeners.publish(changes) }
        return outcome.committed
    }
}
