#if Postgres
public import Foundation
import Logging
import NIOCore
import PostgresNIO
public import Strata
import Synchronization

extension PostgresStorage {
    /// Reads the value for `key`, lets `body` change it, and writes the result back in one
    /// transaction that holds a lock on the key, so no write from any process (another update, a
    /// plain `set`, a removal) is lost or slips in between; setting the value to `nil` removes it.
    ///
    /// `body` runs while the key's lock is held: keep it short, and do not use this storage's same
    /// key from inside it. It runs once, unless a plain `set` from elsewhere stores the key
    /// between the read of a missing key and the write; then it runs again on that value, so it
    /// should have no side effects.
    ///
    /// - Throws: `StorageError.Code.updateAborted` when `body` throws (the transaction is rolled
    ///   back), or any error of ``value(forKey:)``.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await updateReportingExpiry(forKey: key, lifetime: nil, body).result
    }

    /// ``update(forKey:_:)``, giving the value `body` leaves a time to live of its own: with one,
    /// the value expires after it whether it is new or replaces one (zero or less removes the key);
    /// with `nil`, a replaced value keeps its lifetime and a new one gets the default.
    ///
    /// - Throws: as ``update(forKey:_:)``.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await updateReportingExpiry(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body).result
    }

    /// ``update(forKey:_:)``, giving the value `body` leaves a lifetime of its own: with one, the
    /// value gets it whether it is new or replaces one (`Lifetime.unlimited` never expires,
    /// whatever the default; zero or less removes the key); with `nil`, a replaced value keeps its
    /// lifetime and a new one gets the default.
    ///
    /// - Throws: as ``update(forKey:_:)``.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await updateReportingExpiry(forKey: key, lifetime: lifetime, body).result
    }

    /// ``update(forKey:lifetime:_:)``, also returning the expiry (seconds since 1970, on the
    /// storage's clock) of the value it wrote, whose `nil` inside means never, or `nil` when it
    /// removed the key. ``SharedCache`` keeps the value in memory no longer than that.
    func updateReportingExpiry<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> (result: Result, expiry: Double??) {
        let stored = storedKey(key)
        let now = now()
        let expiry: Double? =
            if let lifetime {
                lifetime.expiry(after: now).isFinite ? lifetime.expiry(after: now) : nil
            } else {
                expiry(timeToLive: nil, now: now)
            }
        // Without a lifetime of its own, a value that replaces a live one keeps its expiry,
        // unless rules work one out.
        let rules = lifetime == nil ? options.expiry : nil
        let keepsExpiry = lifetime == nil && rules == nil
        let runOut = lifetime?.hasRunOut ?? false
        let table = table
        // The advisory lock's id, the same in every process.
        let lock = Int64(bitPattern: FNV1a.hash(stored))
        // The transaction runs in a child task (under the time limit) and hands the current value
        // here; `body` runs in this task, which is not Sendable, and sends back what to write.
        let (currentValues, currentValue) = AsyncStream<UpdateStep>.makeStream()
        let (decisions, decide) = AsyncStream<UpdateStep>.makeStream()
        async let transaction: Double?? = {
            defer { currentValue.finish() }
            return try await perform("cannot update", key: key) { connection -> Double?? in
                try await connection.withTransaction(logger: Self.logger) { connection -> Double?? in
                    try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: Self.logger)
                    var decisionIterator = decisions.makeAsyncIterator()
                    while true {
                        // The row, live or expired, locked until the transaction ends: a plain
                        // `set` or `removeValue` of the key from any process waits for it.
                        let rows = try await connection.query(
                            """
                            SELECT value, expiry FROM \(unescaped: table)
                            WHERE digest = sha256(\(stored)) FOR UPDATE
                            """,
                            logger: Self.logger
                        )
                        var rowExists = false
                        var value: Data?
                        var liveExpiry: Double?
                        for try await (current, currentExpiry) in rows.decode((Data, Double?).self) {
                            rowExists = true
                            if currentExpiry.map({ $0 > now }) ?? true {
                                value = current
                                liveExpiry = currentExpiry ?? .infinity
                            }
                        }
                        currentValue.yield(.value(value))
                        guard case .value(let newValue)? = await decisionIterator.next() else {
                            throw UpdateBodyFailed(error: CancellationError())
                        }
                        var expiry = expiry
                        var runOut = runOut
                        if let rules, let newValue {
                            if let ruled = rules.expiry(of: newValue, forKey: key, replacing: liveExpiry, now: now) {
                                expiry = ruled.isFinite ? ruled : nil
                            } else {
                                runOut = true
                            }
                        } else if keepsExpiry, let liveExpiry {
                            expiry = liveExpiry.isFinite ? liveExpiry : nil
                        }
                        guard let newValue, !runOut else {
                            if rowExists {
                                try await connection.query(
                                    "DELETE FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                                    logger: Self.logger
                                )
                            }
                            return .none
                        }
                        if rowExists {
                            try await connection.query(
                                """
                                UPDATE \(unescaped: table) SET value = \(newValue), expiry = \(expiry)
                                WHERE digest = sha256(\(stored))
                                """,
                                logger: Self.logger
                            )
                            return .some(expiry)
                        }
                        // No row to lock: a plain `set` may insert one meanwhile. Insert only if
                        // none is there; when one is, read it (locked now) and run `body` again.
                        let inserted = try await connection.query(
                            """
                            INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                            VALUES (sha256(\(stored)), \(stored), \(newValue), \(expiry))
                            ON CONFLICT (digest) DO NOTHING
                            RETURNING 1
                            """,
                            logger: Self.logger
                        )
                        var didInsert = false
                        for try await _ in inserted.decode(Int32.self) { didInsert = true }
                        if didInsert { return .some(expiry) }
                    }
                }
            }
        }()
        var result: Result?
        var bodyError: (any Error)?
        var iterator = currentValues.makeAsyncIterator()
        while case .value(var value)? = await iterator.next() {
            do {
                result = try body(&value)
                decide.yield(.value(value))
            } catch {
                bodyError = error
                decide.yield(.abort)
                break
            }
        }
        decide.finish()
        let writtenExpiry: Double??
        do {
            writtenExpiry = try await transaction
        } catch {
            if let bodyError {
                throw StorageError.updateAborted(by: bodyError, key: key, storage: name)
            }
            throw mapError(error, key: key, "cannot update")
        }
        guard let result else {
            preconditionFailure("update(forKey:_:) committed without running its body")
        }
        counters.count { $0.writes &+= 1 }
        return (result, writtenExpiry)
    }
}

/// What passes between `update(forKey:_:)` and its transaction: the current value, then the value
/// to write (`nil` removes), or `abort` when the body threw.
enum UpdateStep: Sendable {
    case value(Data?)
    case abort
}

/// What `update(forKey:_:)` throws inside its transaction when the body throws.
struct UpdateBodyFailed: Error {
    var error: any Error
}
#endif
