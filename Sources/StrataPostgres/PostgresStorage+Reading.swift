#if Postgres
public import Foundation
import Logging
import NIOCore
import PostgresNIO
public import Strata
import Synchronization
import _StrataInternals

extension PostgresStorage {
    // MARK: Reading

    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// - Throws: `StorageError` code `StorageError.Code.io` when the server cannot be
    ///   reached or fails, `StorageError.Code.timedOut` when it answers too slowly,
    ///   `StorageError.Code.closed` after ``close()``.
    public func value(forKey key: String) async throws(StorageError) -> Data? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let value = try await perform("cannot read", key: key) { connection -> Data? in
            let rows = try await connection.query(
                """
                SELECT value FROM \(unescaped: table)
                WHERE digest = sha256(\(stored)) AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            for try await (value) in rows.decode(Data.self) {
                return value
            }
            return nil
        }
        counters.count { counters in
            if value == nil {
                counters.misses &+= 1
            } else {
                counters.hits &+= 1
            }
        }
        return value
    }

    /// The live value for `key` and how long it has left, in one query, or `nil`.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func valueWithLifetime(forKey key: String) async throws(StorageError) -> (value: Data, lifetime: Lifetime)? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let row = try await perform("cannot read", key: key) { connection -> (Data, Double?)? in
            let rows = try await connection.query(
                """
                SELECT value, expiry FROM \(unescaped: table)
                WHERE digest = sha256(\(stored)) AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            for try await (value, expiry) in rows.decode((Data, Double?).self) {
                return (value, expiry)
            }
            return nil
        }
        counters.count { counters in
            if row == nil { counters.misses &+= 1 } else { counters.hits &+= 1 }
        }
        guard let (value, expiry) = row, let lifetime = Lifetime(expiry: expiry ?? .infinity, now: now) else {
            return nil
        }
        return (value, lifetime)
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has none, in one
    /// query per ``keysPerRead`` keys.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func values(forKeys keys: [String]) async throws(StorageError) -> [Data?] {
        try await valuesWithLifetimes(forKeys: keys).map { $0?.value }
    }

    /// How many keys one query of ``values(forKeys:)`` and ``valuesWithLifetimes(forKeys:)``
    /// reads: a longer list is read in several queries, each within
    /// ``Options/operationTimeout``, so the time limit bounds how long the server takes to
    /// answer, not how many keys were asked for.
    public static let keysPerRead = 1_000

    /// The live values for `keys`, in the same order, each with how long it has left, `nil`
    /// where a key has none, in one query per ``keysPerRead`` keys.
    ///
    /// A list longer than ``keysPerRead`` is not read as one snapshot: a value written while
    /// the list is read may be seen in a later query and not an earlier one.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func valuesWithLifetimes(
        forKeys keys: [String]
    ) async throws(StorageError) -> [(value: Data, lifetime: Lifetime)?] {
        guard keys.count > Self.keysPerRead else { return try await readValuesWithLifetimes(forKeys: keys[...]) }
        var values: [(value: Data, lifetime: Lifetime)?] = []
        values.reserveCapacity(keys.count)
        var start = keys.startIndex
        while start < keys.endIndex {
            let end = min(start + Self.keysPerRead, keys.endIndex)
            values += try await readValuesWithLifetimes(forKeys: keys[start..<end])
            start = end
        }
        return values
    }

    /// `valuesWithLifetimes(forKeys:)` for at most ``keysPerRead`` keys, in one query.
    private func readValuesWithLifetimes(
        forKeys keys: ArraySlice<String>
    ) async throws(StorageError) -> [(value: Data, lifetime: Lifetime)?] {
        let stored = keys.map { ByteBuffer(bytes: storedKey($0)) }
        let now = now()
        let table = table
        let found = try await perform("cannot read \(keys.count) values", key: nil) { connection in
            let rows = try await connection.query(
                """
                SELECT key, value, expiry FROM \(unescaped: table)
                WHERE digest IN (SELECT sha256(k) FROM unnest(\(stored)::bytea[]) AS k)
                AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            var found: [ByteBuffer: (Data, Double?)] = [:]
            for try await (key, value, expiry) in rows.decode((ByteBuffer, Data, Double?).self) {
                found[key] = (value, expiry)
            }
            return found
        }
        let values: [(value: Data, lifetime: Lifetime)?] = stored.map { key in
            guard let (value, expiry) = found[key], let lifetime = Lifetime(expiry: expiry ?? .infinity, now: now)
            else {
                return nil
            }
            return (value, lifetime)
        }
        let hits = values.count(where: { $0 != nil })
        counters.count { counters in
            counters.hits &+= UInt64(hits)
            counters.misses &+= UInt64(keys.count - hits)
        }
        return values
    }

    /// Returns every key with a value that has not expired, in no particular order.
    public func keys() async throws(StorageError) -> [String] {
        let now = now()
        let table = table
        return try await perform("cannot list keys", key: nil) { connection in
            let rows = try await connection.query(
                "SELECT key FROM \(unescaped: table) WHERE expiry IS NULL OR expiry > \(now)",
                logger: Self.logger
            )
            var keys: [String] = []
            for try await key in rows.decode(Data.self) {
                keys.append(String(decoding: key, as: UTF8.self))
            }
            return keys
        }
    }

    /// A snapshot of the table's totals (one scan) and this instance's counters.
    public func statistics() async throws(StorageError) -> StorageStatistics {
        let table = table
        let totals = try await perform("cannot count values", key: nil) { connection -> (Int, Int) in
            let rows = try await connection.query(
                """
                SELECT count(*)::bigint, coalesce(sum(octet_length(key) + octet_length(value)), 0)::bigint
                FROM \(unescaped: table)
                """,
                logger: Self.logger
            )
            for try await (count, bytes) in rows.decode((Int, Int).self) {
                return (count, bytes)
            }
            return (0, 0)
        }
        return counters.statistics(count: totals.0, totalCost: totals.1)
    }

    /// How long the value for `key` has left: `Lifetime.unlimited`, `Lifetime.remaining(_:)`, or
    /// `nil` when there is no live value. Does not count as a use.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func lifetime(forKey key: String) async throws(StorageError) -> Lifetime? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let expiry = try await perform("cannot read the lifetime", key: key) { connection -> Double?? in
            let rows = try await connection.query(
                "SELECT expiry FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                logger: Self.logger
            )
            for try await (expiry) in rows.decode(Double?.self) {
                return .some(expiry)
            }
            return .none
        }
        guard let expiry else { return nil }
        return Lifetime(expiry: expiry ?? .infinity, now: now)
    }
}
#endif
