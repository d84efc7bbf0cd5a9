public import Foundation
import GRDB
public import Strata
import Synchronization
import _StrataInternals

// Writing: set, remove, batches, update.

extension SQLiteStorage {
    /// Stores `value` for `key` with the default time to live.
    ///
    /// - Throws: `StorageError` code `StorageError.Code.capacityExceeded` when the value
    ///   alone is larger than ``Options/maximumByteCount`` (nothing is written),
    ///   `StorageError.Code.timedOut` when another process held the write lock too long,
    ///   `StorageError.Code.io` when SQLite fails.
    public func set(_ value: Data, forKey key: String) throws(StorageError) {
        try setValues([key: value], timeToLive: nil)
    }

    /// Stores `value` for `key`, expiring after `timeToLive` (or the default when `nil`).
    ///
    /// - Throws: as `set(_:forKey:)`.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) throws(StorageError) {
        try setValues([key: value], timeToLive: timeToLive)
    }

    /// Stores every value in `values` in one transaction: all are written or none.
    ///
    /// A `timeToLive` of zero or less has already run out, as on every storage of Strata: the
    /// values are not stored, and the older values for their keys are removed.
    ///
    /// - Throws: as `set(_:forKey:)`.
    public func setValues(_ values: [String: Data], timeToLive: Duration? = nil) throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            try removeValues(forKeys: Array(values.keys))
            return
        }
        let now = now()
        let expiry = expiry(timeToLive: timeToLive, now: now)
        let rules = timeToLive == nil ? options.expiry : nil
        // In key order, so SQLite walks its index once instead of jumping around it.
        let rows = values.map { (key: normalizedKey($0.key), value: $0.value) }.sorted { $0.key < $1.key }
        if let limit = options.maximumByteCount,
            let large = rows.first(where: { $0.value.count + $0.key.utf8.count > limit })
        {
            throw StorageError(
                .capacityExceeded,
                key: large.key,
                storage: name,
                message: "the value needs \(large.value.count + large.key.utf8.count) bytes; the limit is \(limit)"
            )
        }
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            let evicted = try pool.write { db in
                changes.removeAll()
                let statement = try db.cachedStatement(
                    sql: """
                        INSERT INTO strata_values (key, value, size, expiry, accessed) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (key) DO UPDATE SET
                            value = excluded.value, size = excluded.size,
                            expiry = excluded.expiry, accessed = excluded.accessed
                        """
                )
                for row in rows {
                    var rowExpiry = expiry
                    if let rules {
                        guard let ruled = try ruledExpiry(rules, db, value: row.value, key: row.key, now: now) else {
                            // A lifetime that has run out: nothing is stored, the older value goes.
                            try db.execute(
                                sql: "DELETE FROM strata_values WHERE key = ?",
                                arguments: [Data(row.key.utf8)]
                            )
                            if listening, db.changesCount > 0 {
                                changes.append(StorageChange(key: row.key, kind: .removed))
                            }
                            continue
                        }
                        rowExpiry = ruled
                    }
                    try statement.execute(
                        arguments: [
                            Data(row.key.utf8), row.value, row.value.count + row.key.utf8.count, rowExpiry, now,
                        ]
                    )
                    if listening { changes.append(StorageChange(key: row.key, kind: .set)) }
                }
                // Values with lifetimes: each new one removes up to two expired ones (through
                // the expiry index), so a file written and never read stays near what is alive.
                var swept = 0
                if expiry != nil || rules != nil {
                    swept = try delete(
                        db,
                        """
                        DELETE FROM strata_values WHERE rowid IN (
                            SELECT rowid FROM strata_values WHERE expiry <= ? ORDER BY expiry LIMIT ?
                        )
                        """,
                        arguments: [now, 2 * rows.count],
                        reporting: listening ? .expired : nil,
                        into: &changes
                    )
                }
                var evicted = try enforceLimits(db, now: now, reporting: listening, into: &changes)
                evicted.expirations += swept
                return evicted
            }
            counters.count { counters in
                counters.writes &+= UInt64(rows.count)
                counters.countEvictions &+= UInt64(evicted.count)
                counters.sizeEvictions &+= UInt64(evicted.size)
                counters.expirations &+= UInt64(evicted.expirations)
            }
        } catch {
            throw mapError(error, key: rows.count == 1 ? rows.first?.key : nil, "cannot write")
        }
        if listening { changeListeners.publish(changes) }
    }

    /// Runs the `DELETE` statement `sql`; returns how many rows it removed. With a `kind`, the
    /// statement also returns the removed keys (`RETURNING key`), and each is appended to
    /// `changes` as a change of that kind; without one, nothing is collected.
    func delete(
        _ db: Database,
        _ sql: String,
        arguments: StatementArguments = StatementArguments(),
        reporting kind: StorageChange<String>.Kind?,
        into changes: inout [StorageChange<String>]
    ) throws -> Int {
        guard let kind else {
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            return db.changesCount
        }
        let keys = try Data.fetchAll(db.cachedStatement(sql: sql + " RETURNING key"), arguments: arguments)
        for key in keys {
            changes.append(StorageChange(key: String(decoding: key, as: UTF8.self), kind: kind))
        }
        return keys.count
    }

    /// Removes expired values, then least recently used ones, until the limits hold; when
    /// `reporting`, appends what it removed to `changes`.
    func enforceLimits(
        _ db: Database,
        now: Double,
        reporting: Bool,
        into changes: inout [StorageChange<String>]
    ) throws -> Evicted {
        guard options.maximumCount != nil || options.maximumByteCount != nil else { return Evicted() }
        let maximumCount = options.maximumCount ?? .max
        let maximumBytes = options.maximumByteCount ?? .max
        func totals() throws -> (count: Int, bytes: Int) {
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT count, bytes FROM strata_totals"))
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
        var (count, bytes) = try totals()
        guard count > maximumCount || bytes > maximumBytes else { return Evicted() }
        var evicted = Evicted(
            expirations: try delete(
                db,
                "DELETE FROM strata_values WHERE expiry <= ?",
                arguments: [now],
                reporting: reporting ? .expired : nil,
                into: &changes
            )
        )
        (count, bytes) = try totals()
        var victims: [Data] = []
        let cursor = try Row.fetchCursor(db, sql: "SELECT key, size FROM strata_values ORDER BY accessed, rowid")
        while count > maximumCount || bytes > maximumBytes, let row = try cursor.next() {
            // Counted as the memory and disk storages count: for the count limit while it is
            // passed, for the byte limit after.
            if count > maximumCount { evicted.count += 1 } else { evicted.size += 1 }
            victims.append(row[0] as Data)
            count -= 1
            bytes -= row[1] as Int
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM strata_values WHERE key = ?")
        for key in victims {
            try delete.execute(arguments: [key])
            if reporting { changes.append(StorageChange(key: String(decoding: key, as: UTF8.self), kind: .evicted)) }
        }
        return evicted
    }

    /// What ``enforceLimits(_:now:reporting:into:)`` removed: values evicted for each limit, and expired ones.
    struct Evicted {
        var count = 0
        var size = 0
        var expirations = 0
    }

    /// Removes the value for `key`, if any.
    ///
    /// - Throws: `StorageError.Code.io` when SQLite fails.
    public func removeValue(forKey key: String) throws(StorageError) {
        try removeValues(forKeys: [key])
    }

    /// Removes the values for `keys` in one transaction.
    ///
    /// - Throws: `StorageError.Code.io` when SQLite fails.
    public func removeValues(forKeys keys: some Sequence<String>) throws(StorageError) {
        let keys = keys.map(normalizedKey)
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            try pool.write { db in
                changes.removeAll()
                let statement = try db.cachedStatement(sql: "DELETE FROM strata_values WHERE key = ?")
                for key in keys {
                    try statement.execute(arguments: [Data(key.utf8)])
                    if listening, db.changesCount > 0 { changes.append(StorageChange(key: key, kind: .removed)) }
                }
            }
        } catch {
            throw mapError(error, key: keys.count == 1 ? keys.first : nil, "cannot remove")
        }
        if listening { changeListeners.publish(changes) }
    }

    /// Removes every value.
    public func removeAll() throws(StorageError) {
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            try pool.write { db in
                changes.removeAll()
                _ = try delete(db, "DELETE FROM strata_values", reporting: listening ? .cleared : nil, into: &changes)
            }
        } catch {
            throw mapError(error, key: nil, "cannot remove every value")
        }
        if listening { changeListeners.publish(changes) }
    }

    /// Removes every expired value now rather than when a limit needs the room; returns how many.
    @discardableResult
    public func removeExpired() throws(StorageError) -> Int {
        let now = now()
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            let removed = try pool.write { db in
                changes.removeAll()
                return try delete(
                    db,
                    "DELETE FROM strata_values WHERE expiry <= ?",
                    arguments: [now],
                    reporting: listening ? .expired : nil,
                    into: &changes
                )
            }
            counters.count { $0.expirations &+= UInt64(removed) }
            if listening { changeListeners.publish(changes) }
            return removed
        } catch {
            throw mapError(error, key: nil, "cannot remove expired values")
        }
    }

    /// Reads the value for `key`, lets `body` change it, and writes the result back in one
    /// SQLite write transaction; setting it to `nil` removes it.
    ///
    /// `body` runs once, inside the transaction, so other writers (threads or processes) wait
    /// for it: keep it short, and do not use this storage from inside it.
    ///
    /// - Throws: `StorageError.Code.updateAborted` when `body` throws (nothing is written), or
    ///   any error of `value(forKey:)` and `set(_:forKey:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, timeToLive: nil, body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a time to live of its own: with one,
    /// the value expires after it whether it is new or replaces one (zero or less removes the key);
    /// with `nil`, a replaced value keeps its lifetime and a new one gets the default.
    ///
    /// - Throws: as `update(forKey:_:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a lifetime of its own: with one, the
    /// value gets it whether it is new or replaces one (`Lifetime.unlimited` never expires,
    /// whatever the default; zero or less removes the key); with `nil`, a replaced value keeps its
    /// lifetime and a new one gets the default.
    ///
    /// - Throws: as `update(forKey:_:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        let key = normalizedKey(key)
        var bodyError: (any Error)?
        var result: Result?
        var wrote = false
        let listening = changeListeners.isActive
        var changes: [StorageChange<String>] = []
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    // The time once this update holds the write lock, not when it was called: after
                    // a long wait for other writers, a value that expired meanwhile is absent to
                    // `body`, and one that replaces a live value keeps an expiry still ahead.
                    let now = self.now()
                    changes.removeAll()
                    let row = try readRow(db, key: key)
                    var value = try row.flatMap { row throws(StorageError) -> Data? in
                        guard row.expiry.map({ $0 > now }) ?? true else { return nil }
                        return try data(row.value, key: key)
                    }
                    let before = value
                    do {
                        result = try body(&value)
                    } catch {
                        bodyError = error
                        return .rollback
                    }
                    wrote = try writeUpdated(
                        db,
                        key: key,
                        value: value,
                        hadValue: before != nil || row != nil,
                        liveExpiry: before != nil ? .some(row?.expiry) : nil,
                        lifetime: lifetime,
                        now: now,
                        reporting: listening,
                        into: &changes
                    )
                    return .commit
                }
            }
        } catch {
            throw mapError(error, key: key, "cannot update")
        }
        if let bodyError {
            throw StorageError.updateAborted(by: bodyError, key: key, storage: name)
        }
        if wrote { counters.count { $0.writes &+= 1 } }
        if listening { changeListeners.publish(changes) }
        guard let result else {
            preconditionFailure("update(forKey:_:) committed without running its body")
        }
        return result
    }
}

extension SQLiteStorage {
    /// Writes an update's result inside its transaction: the value, or a removal for `nil`.
    /// A value gets `lifetime` when there is one (zero or less removes the row instead);
    /// otherwise a value that replaces a live one keeps its expiry (`liveExpiry`, whose `nil`
    /// inside means never) and a new one gets the default. Returns whether a value was written;
    /// when `reporting`, appends what changed to `changes`.
    func writeUpdated(
        _ db: Database,
        key: String,
        value: Data?,
        hadValue: Bool,
        liveExpiry: Double??,
        lifetime: Lifetime?,
        now: Double,
        reporting: Bool,
        into changes: inout [StorageChange<String>]
    ) throws -> Bool {
        var value = value
        if lifetime?.hasRunOut == true { value = nil }
        var newExpiry: Double?
        if let lifetime {
            let expiry = lifetime.expiry(after: now)
            newExpiry = expiry.isFinite ? expiry : nil
        } else if let rules = options.expiry, let written = value {
            // The live value's lifetime is `liveExpiry`; its inner `nil` means never.
            let replacing = liveExpiry.map { $0 ?? .infinity }
            if let ruled = rules.expiry(of: written, forKey: key, replacing: replacing, now: now) {
                newExpiry = ruled.isFinite ? ruled : nil
            } else {
                value = nil
            }
        } else {
            newExpiry = liveExpiry ?? expiry(timeToLive: nil, now: now)
        }
        if let value {
            try db.execute(
                sql: """
                    INSERT INTO strata_values (key, value, size, expiry, accessed) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET
                        value = excluded.value, size = excluded.size,
                        expiry = excluded.expiry, accessed = excluded.accessed
                    """,
                arguments: [Data(key.utf8), value, value.count + key.utf8.count, newExpiry, now]
            )
            if reporting { changes.append(StorageChange(key: key, kind: .set)) }
            _ = try enforceLimits(db, now: now, reporting: reporting, into: &changes)
            return true
        } else if hadValue {
            try db.execute(sql: "DELETE FROM strata_values WHERE key = ?", arguments: [Data(key.utf8)])
            if reporting, db.changesCount > 0 { changes.append(StorageChange(key: key, kind: .removed)) }
        }
        return false
    }
}
