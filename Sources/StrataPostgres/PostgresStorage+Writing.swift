#if Postgres
public import Foundation
import Logging
import NIOCore
import PostgresNIO
public import Strata
import Synchronization

extension PostgresStorage {
    // MARK: Writing

    /// Stores `value` for `key` with the default time to live. When this returns, the write is
    /// committed.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func set(_ value: Data, forKey key: String) async throws(StorageError) {
        try await set(value, forKey: key, timeToLive: nil)
    }

    /// Stores `value` for `key`, expiring after `timeToLive` (or the default when `nil`).
    ///
    /// - Throws: as ``value(forKey:)``.
    ///
    /// A `timeToLive` of zero or less has already run out, as on every storage of Strata: the
    /// value is not stored, and the older value for `key` is removed.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            try await removeValue(forKey: key)
            return
        }
        let stored = storedKey(key)
        let now = now()
        var expiry = expiry(timeToLive: timeToLive, now: now)
        if timeToLive == nil, let rules = options.expiry {
            if rules.hasUpdateRule {
                // The rule needs the old value's lifetime: read and write under the key's lock.
                _ = try await updateReportingExpiry(forKey: key, lifetime: nil) { $0 = value }
                return
            }
            guard let ruled = rules.expiry(of: value, forKey: key, replacing: nil, now: now) else {
                try await removeValue(forKey: key)
                return
            }
            expiry = ruled.isFinite ? ruled : nil
        }
        let table = table
        try await perform("cannot write", key: key) { [expiry] connection in
            guard expiry != nil else {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                    VALUES (sha256(\(stored)), \(stored), \(value), NULL)
                    ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                    """,
                    logger: Self.logger
                )
                return
            }
            // A value with a lifetime removes up to two expired ones in the same statement (one
            // round trip), skipping rows another writer holds, so a table written and never read
            // stays near what is alive. `strata.now` tells the trigger they expired.
            try await connection.query(
                """
                WITH clock AS MATERIALIZED (SELECT set_config('strata.now', \(now)::text, true)),
                swept AS (
                    DELETE FROM \(unescaped: table) WHERE digest IN (
                        SELECT digest FROM \(unescaped: table)
                        WHERE expiry <= \(now) AND digest <> sha256(\(stored)) AND EXISTS (SELECT FROM clock)
                        ORDER BY expiry LIMIT 2 FOR UPDATE SKIP LOCKED
                    )
                )
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                VALUES (sha256(\(stored)), \(stored), \(value), \(expiry))
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.count { $0.writes &+= 1 }
    }

    /// Stores every value in `entries` with the storage's default lifetime, in one statement:
    /// all are written or none. A key given twice keeps the later value.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func setValues(_ entries: [(key: String, value: Data)]) async throws(StorageError) {
        try await setValues(Dictionary(entries, uniquingKeysWith: { _, later in later }), timeToLive: nil)
    }

    /// Stores every value in `values` in one statement: all are written or none.
    ///
    /// - Throws: as ``value(forKey:)``.
    ///
    /// A `timeToLive` of zero or less removes the keys' values instead, as ``set(_:forKey:timeToLive:)``.
    public func setValues(_ values: [String: Data], timeToLive: Duration? = nil) async throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            for key in values.keys { try await removeValue(forKey: key) }
            return
        }
        if timeToLive == nil, let rules = options.expiry {
            try await setValues(values, by: rules)
            return
        }
        var rows: [Data: Data] = [:]
        for (key, value) in values {
            rows[storedKey(key)] = value
        }
        let keys = rows.keys.map { ByteBuffer(bytes: $0) }
        let payloads = rows.values.map { ByteBuffer(bytes: $0) }
        let expiry = expiry(timeToLive: timeToLive, now: now())
        let table = table
        try await perform("cannot write \(rows.count) values", key: nil) { connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                SELECT sha256(k), k, v, \(expiry)::double precision
                FROM unnest(\(keys)::bytea[], \(payloads)::bytea[]) AS batch (k, v)
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.count { $0.writes &+= UInt64(rows.count) }
    }

    /// Stores `values` with the lifetimes `rules` give them: in one statement, which also removes
    /// the keys whose lifetime has already run out, or, with an `afterUpdate` rule, one update
    /// per value.
    func setValues(_ values: [String: Data], by rules: Expiry<String, Data>) async throws(StorageError) {
        if rules.hasUpdateRule {
            for (key, value) in values {
                _ = try await updateReportingExpiry(forKey: key, lifetime: nil) { $0 = value }
            }
            return
        }
        let now = now()
        var keys: [ByteBuffer] = []
        var payloads: [ByteBuffer] = []
        var expiries: [Double] = []
        var gone: [ByteBuffer] = []
        for (key, value) in values {
            let stored = ByteBuffer(bytes: storedKey(key))
            // Never is written as infinity here, and stored as NULL.
            guard let expiry = rules.expiry(of: value, forKey: key, replacing: nil, now: now) else {
                gone.append(stored)
                continue
            }
            keys.append(stored)
            payloads.append(ByteBuffer(bytes: value))
            expiries.append(expiry)
        }
        let table = table
        try await perform("cannot write \(values.count) values", key: nil) {
            [keys, payloads, expiries, gone] connection in
            try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM \(unescaped: table)
                    WHERE digest IN (SELECT sha256(g) FROM unnest(\(gone)::bytea[]) AS removed (g))
                )
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                SELECT sha256(k), k, v, NULLIF(e, 'Infinity'::double precision)
                FROM unnest(\(keys)::bytea[], \(payloads)::bytea[], \(expiries)::double precision[]) AS batch (k, v, e)
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.count { $0.writes &+= UInt64(keys.count) }
    }

    /// Removes the value for `key`, if any. When this returns, the removal is committed.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func removeValue(forKey key: String) async throws(StorageError) {
        let stored = storedKey(key)
        let table = table
        try await perform("cannot remove", key: key) { connection in
            try await connection.query(
                "DELETE FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                logger: Self.logger
            )
        }
    }

    /// Removes every value (`TRUNCATE`; other processes' ``SharedCache``s drop everything).
    public func removeAll() async throws(StorageError) {
        let table = table
        try await perform("cannot remove every value", key: nil) { connection in
            try await connection.query("TRUNCATE \(unescaped: table)", logger: Self.logger)
        }
    }

    /// Removes every expired value; returns how many.
    @discardableResult
    public func removeExpired() async throws(StorageError) -> Int {
        let now = now()
        let table = table
        let removed = try await perform("cannot remove expired values", key: nil) { connection in
            let rows = try await connection.query(
                // `strata.now` tells the trigger that these rows expired.
                """
                WITH clock AS MATERIALIZED (SELECT set_config('strata.now', \(now)::text, true)),
                gone AS (
                    DELETE FROM \(unescaped: table) WHERE expiry <= \(now) AND EXISTS (SELECT FROM clock) RETURNING 1
                )
                SELECT count(*)::bigint FROM gone
                """,
                logger: Self.logger
            )
            for try await count in rows.decode(Int.self) {
                return count
            }
            return 0
        }
        counters.count { $0.expirations &+= UInt64(removed) }
        return removed
    }
}
#endif
