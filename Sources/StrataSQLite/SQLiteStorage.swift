public import Foundation
import GRDB
public import Strata
import Synchronization
import _StrataInternals

/// A storage of `Data` in one SQLite file: a key-value table in WAL mode, time to live, byte and
/// count limits with least-recently-used eviction, batched reads and writes.
///
/// Values live in one table (`strata_values`); a second table, kept by triggers, holds the count
/// and bytes, so limits cost no scan and hold for every process sharing the file. Reads run
/// concurrently on a pool of readers; writes, `update(forKey:_:)` included, are SQLite
/// transactions, atomic across threads and processes. Keys only ever reach SQL as bound
/// parameters, so no key can change a statement.
///
/// Every method comes twice. The synchronous one does its I/O on the calling thread, the caller's
/// choice; the async one (the `Storage` protocols') runs it on Strata's own I/O threads, never on
/// the caller's actor or a cooperative-pool thread. Any task or thread may use it, and several processes may
/// share a file.
///
/// ```swift
/// let cities = try SQLiteStorage(path: "cities.sqlite").json(City.self)
/// try await cities.set(kharkiv, forKey: "kharkiv")
/// ```
public final class SQLiteStorage: Sendable {
    /// The schema version this code writes, kept in SQLite's `user_version`.
    static let schemaVersion = 1

    /// The database file's path.
    public let path: String
    /// The options the storage was opened with.
    public let options: Options
    let pool: DatabasePool
    /// What this instance has counted since it was opened, published to ``Options/metrics``.
    let counters: StatisticsCounter
    private let isClosed = Atomic(false)
    let name = "SQLiteStorage"
    /// Who listens to ``changes(bufferingNewest:)``.
    let changeListeners = Broadcast<StorageChange<String>>()

    /// Opens (creating if needed) the SQLite database at `path`.
    ///
    /// - Throws: `StorageError` code `StorageError.Code.corrupted` when the file is not a
    ///   SQLite database or is damaged, `StorageError.Code.unsupported` when a newer version of
    ///   Strata wrote it, `StorageError.Code.io` when it cannot be opened or created. An option out
    ///   of range (a limit, a time to live or `maximumReaderCount` below 1, `timeToLive` beside
    ///   `expiry`, an `expiry` with an `afterRead` rule) is a programmer error: the program stops
    ///   with a message that names it.
    public init(path: String, options: Options = Options()) throws(StorageError) {
        self.path = path
        self.options = options
        self.counters = StatisticsCounter(
            observer: StorageObserver.make(storage: "SQLiteStorage", logger: options.logger, metrics: options.metrics),
            clock: options.clock
        )
        ConfigurationRule.requireUsableLimits(
            of: "SQLiteStorage",
            maximumCount: options.maximumCount,
            maximumCost: options.maximumByteCount,
            timeToLive: options.timeToLive,
            expiry: options.expiry
        )
        if let expiry = options.expiry, expiry.idleTime == nil,
            let problem = expiry.problemWithoutReadRules(in: "SQLiteStorage")
        {
            ConfigurationRule.require(false, problem, in: "SQLiteStorage")
        }
        ConfigurationRule.require(
            options.maximumReaderCount >= 1,
            "maximumReaderCount must be at least 1, got \(options.maximumReaderCount)",
            in: "SQLiteStorage"
        )
        var configuration = Configuration()
        configuration.label = "Strata.SQLiteStorage"
        configuration.busyMode = .timeout(options.busyTimeout.timeInterval)
        configuration.qos = options.qualityOfService
        configuration.maximumReaderCount = options.maximumReaderCount
        configuration.observesSuspensionNotifications = options.observesSuspensionNotifications
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try Self.migrate(db, path: path)
                    return .commit
                }
            }
        } catch {
            throw Self.openError(error, path: path)
        }
    }

    /// Suspends every storage of the process opened with
    /// ``Options/observesSuspensionNotifications``: until ``resumeAll()``, they take no database
    /// lock, so iOS can suspend the app without killing it for holding one. Call it when the app
    /// is about to be suspended; reads still answer, writes fail with `StorageError.Code.io`.
    ///
    /// It posts GRDB's `Database.suspendNotification`, so other GRDB databases of the process
    /// that observe it suspend too.
    public static func suspendAll() {
        NotificationCenter.default.post(name: Database.suspendNotification, object: nil)
    }

    /// Lets the storages ``suspendAll()`` suspended take locks again.
    public static func resumeAll() {
        NotificationCenter.default.post(name: Database.resumeNotification, object: nil)
    }

    /// What this storage changes from now on: each key set, removed, expired (when its row is
    /// removed), evicted or cleared, once its transaction has committed (see
    /// `ObservableStorage`). Keys are reported as stored, NFC-normalized. Only this storage's own
    /// writes are reported: another `SQLiteStorage` or process writing the same file is not seen.
    /// The storage never waits for a listener: the stream keeps the newest `limit` changes not read
    /// yet, and while nobody listens nothing is collected.
    ///
    /// ```swift
    /// for await change in sqlite.changes() where change.kind == .evicted {
    ///     print("\(change.key) was evicted")
    /// }
    /// ```
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<String>> {
        changeListeners.subscribe(bufferingNewest: limit)
    }

    /// Closes the database; later calls throw. Calling it again does nothing.
    public func close() throws(StorageError) {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do {
            try pool.close()
        } catch {
            throw StorageError(.io, storage: name, message: "cannot close \(path)", underlying: error)
        }
    }

    private static func migrate(_ db: Database, path: String) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version <= schemaVersion else {
            throw StorageError(
                .unsupported,
                storage: "SQLiteStorage",
                message: "\(path) has schema version \(version); this version of Strata reads up to \(schemaVersion)"
            )
        }
        guard version < schemaVersion else { return }
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS strata_values (
                    key BLOB NOT NULL PRIMARY KEY,
                    value BLOB NOT NULL,
                    size INTEGER NOT NULL,
                    expiry REAL,
                    accessed REAL NOT NULL
                );
                CREATE INDEX IF NOT EXISTS strata_values_accessed ON strata_values (accessed);
                CREATE INDEX IF NOT EXISTS strata_values_expiry ON strata_values (expiry) WHERE expiry IS NOT NULL;
                CREATE TABLE IF NOT EXISTS strata_totals (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    count INTEGER NOT NULL,
                    bytes INTEGER NOT NULL
                );
                INSERT OR IGNORE INTO strata_totals (id, count, bytes) VALUES (1, 0, 0);
                CREATE TRIGGER IF NOT EXISTS strata_values_inserted AFTER INSERT ON strata_values BEGIN
                    UPDATE strata_totals SET count = count + 1, bytes = bytes + NEW.size WHERE id = 1;
                END;
                CREATE TRIGGER IF NOT EXISTS strata_values_updated AFTER UPDATE OF size ON strata_values BEGIN
                    UPDATE strata_totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 1;
                END;
                CREATE TRIGGER IF NOT EXISTS strata_values_deleted AFTER DELETE ON strata_values BEGIN
                    UPDATE strata_totals SET count = count - 1, bytes = bytes - OLD.size WHERE id = 1;
                END;
                PRAGMA user_version = \(schemaVersion);
                """
        )
    }

    // MARK: Errors

    private static func openError(_ error: any Error, path: String) -> StorageError {
        SQLiteErrors.opening(error, path: path, storage: "SQLiteStorage")
    }

    /// Turns a GRDB error into a `StorageError`.
    func mapError(_ error: any Error, key: String?, _ message: String) -> StorageError {
        SQLiteErrors.operation(
            error,
            key: key,
            message: message,
            path: path,
            storage: name,
            isClosed: isClosed.load(ordering: .acquiring),
            closedMessage: "the storage was closed"
        )
    }

    // MARK: Keys and time

    /// The key as stored: NFC-normalized, so keys Swift considers equal share one row.
    func normalizedKey(_ key: String) -> String {
        key.nfcNormalized
    }

    func now() -> Double {
        options.clock.now().timeIntervalSince1970
    }

    func expiry(timeToLive: Duration?, now: Double) -> Double? {
        (timeToLive ?? options.timeToLive).map { now + $0.timeInterval }
    }

    /// The idle time of ``Options/expiry``, in seconds, or 0 when reads do not renew lifetimes.
    var idleTime: Double {
        options.expiry?.idleTime?.timeInterval ?? 0
    }

    /// How stale a value's access time may be before a read records the access: the recency
    /// resolution, or a sixteenth of the idle time when that is shorter.
    var touchInterval: Double {
        let resolution = options.recencyResolution.timeInterval
        return idleTime > 0 ? min(resolution, idleTime / 16) : resolution
    }

    /// The expiry column the rules give `value` written for `key` in `db` at `now` (`nil` for
    /// never), or `.none` when its lifetime has already run out. With a rule for replaced values,
    /// reads the live value's expiry first.
    func ruledExpiry(
        _ rules: Expiry<String, Data>,
        _ db: Database,
        value: Data,
        key: String,
        now: Double
    ) throws -> Double?? {
        var replacing: Double?
        if rules.hasUpdateRule, let row = try readRow(db, key: key), row.expiry.map({ $0 > now }) ?? true {
            replacing = row.expiry ?? .infinity
        }
        guard let expiry = rules.expiry(of: value, forKey: key, replacing: replacing, now: now) else { return .none }
        return .some(expiry.isFinite ? expiry : nil)
    }

    // MARK: Reading

    /// A row as read: the value, or a value of the wrong type.
    enum StoredValue: Equatable, Sendable {
        case data(Data)
        case wrongType(String)
    }

    /// Reads `key`'s row in `db`; `nil` when absent.
    func readRow(_ db: Database, key: String) throws -> (value: StoredValue, expiry: Double?, accessed: Double)? {
        let statement = try db.cachedStatement(
            sql: "SELECT value, expiry, accessed FROM strata_values WHERE key = ?"
        )
        guard let row = try Row.fetchOne(statement, arguments: [Data(key.utf8)]) else { return nil }
        let stored: StoredValue
        switch (row[0] as DatabaseValue).storage {
        case .blob(let data): stored = .data(data)
        case .string(let string): stored = .data(Data(string.utf8))
        case .null: stored = .wrongType("NULL")
        case .int64: stored = .wrongType("an integer")
        case .double: stored = .wrongType("a real number")
        }
        return (stored, row[1], row[2])
    }

    func data(_ stored: StoredValue, key: String) throws(StorageError) -> Data {
        switch stored {
        case .data(let data):
            return data
        case .wrongType(let type):
            throw StorageError(
                .corrupted,
                key: key,
                storage: name,
                message: "the stored value is \(type), not a blob; the row was written by something other than Strata"
            )
        }
    }

    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// A read only reads, unless the value's access time is older than
    /// ``Options/recencyResolution``; then it also records the access. A read whose access cannot
    /// be recorded still returns the value it read.
    ///
    /// - Throws: `StorageError` code `StorageError.Code.corrupted` when the row holds no
    ///   blob or the file is damaged, `StorageError.Code.io` when SQLite fails,
    ///   `StorageError.Code.closed` after ``close()``.
    public func value(forKey key: String) throws(StorageError) -> Data? {
        let key = normalizedKey(key)
        let now = now()
        let row: (value: StoredValue, expiry: Double?, accessed: Double)?
        do {
            row = try pool.read { db in try readRow(db, key: key) }
        } catch {
            throw mapError(error, key: key, "cannot read")
        }
        guard let row, row.expiry.map({ $0 > now }) ?? true else {
            counters.count { $0.misses &+= 1 }
            return nil
        }
        let value = try data(row.value, key: key)
        counters.count { $0.hits &+= 1 }
        if now - row.accessed > touchInterval {
            touch([key], now: now)
        }
        return value
    }

    /// How long the value for `key` has left: `Lifetime.unlimited`, `Lifetime.remaining(_:)`, or
    /// `nil` when there is no live value. Does not count as a use.
    ///
    /// - Throws: as `value(forKey:)`.
    public func lifetime(forKey key: String) throws(StorageError) -> Lifetime? {
        let key = normalizedKey(key)
        let now = now()
        let row: Row?
        do {
            row = try pool.read { db in
                try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT expiry FROM strata_values WHERE key = ?"),
                    arguments: [Data(key.utf8)]
                )
            }
        } catch {
            throw mapError(error, key: key, "cannot read the lifetime")
        }
        guard let row else { return nil }
        let expiry: Double? = row[0]
        return Lifetime(expiry: expiry ?? .infinity, now: now)
    }

    /// Answers `ImmediateLookup.unavailable`: every read is database I/O, which an async chain
    /// runs off its caller's thread through the async `value(forKey:)`.
    public func immediateValue(forKey key: String) throws(StorageError) -> ImmediateLookup<Data> {
        .unavailable
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has none, in one read
    /// transaction.
    ///
    /// - Throws: as `value(forKey:)`.
    public func values(forKeys keys: [String]) throws(StorageError) -> [Data?] {
        let now = now()
        let keys = keys.map { (original: $0, normalized: normalizedKey($0)) }
        let rows: [(key: String, value: StoredValue, expiry: Double?, accessed: Double)?]
        do {
            rows = try pool.read { db in
                try keys.map { key in
                    try readRow(db, key: key.normalized).map { (key.original, $0.value, $0.expiry, $0.accessed) }
                }
            }
        } catch {
            throw mapError(error, key: nil, "cannot read \(keys.count) values")
        }
        var found: [Data?] = []
        found.reserveCapacity(rows.count)
        var hits = 0
        var stale: [String] = []
        for row in rows {
            guard let row, row.expiry.map({ $0 > now }) ?? true else {
                found.append(nil)
                continue
            }
            found.append(try data(row.value, key: row.key))
            hits += 1
            if now - row.accessed > touchInterval {
                stale.append(normalizedKey(row.key))
            }
        }
        counters.count { counters in
            counters.hits &+= UInt64(hits)
            counters.misses &+= UInt64(keys.count - hits)
        }
        if !stale.isEmpty {
            touch(stale, now: now)
        }
        return found
    }

    /// Records an access to `keys` at `now`, renewing their idle time if they have one. A failure (another connection holding the write lock
    /// past the busy timeout, a read-only file) does not fail the read that found the values: it
    /// is counted in ``Statistics/recencyWriteFailures``, and the keys only look older to the
    /// eviction order than they are.
    private func touch(_ keys: [String], now: Double) {
        do {
            try pool.write { db in
                let statement = try db.cachedStatement(
                    sql: """
                        UPDATE strata_values SET accessed = ?,
                            expiry = CASE WHEN expiry IS NULL OR ? = 0 THEN expiry ELSE max(expiry, ?) END
                        WHERE key = ?
                        """
                )
                for key in keys {
                    try statement.execute(arguments: [now, idleTime, now + idleTime, Data(key.utf8)])
                }
            }
        } catch {
            counters.count { $0.recencyWriteFailures &+= 1 }
        }
    }

    /// Returns whether `key` has a value that has not expired, without recording an access.
    public func containsValue(forKey key: String) throws(StorageError) -> Bool {
        let key = normalizedKey(key)
        let now = now()
        do {
            return try pool.read { db in
                try Bool.fetchOne(
                    db,
                    sql: "SELECT 1 FROM strata_values WHERE key = ? AND (expiry IS NULL OR expiry > ?)",
                    arguments: [Data(key.utf8), now]
                ) ?? false
            }
        } catch {
            throw mapError(error, key: key, "cannot read")
        }
    }

    /// Returns every key with a value that has not expired, in no particular order.
    public func keys() throws(StorageError) -> [String] {
        let now = now()
        do {
            return try pool.read { db in
                try Data.fetchAll(
                    db,
                    sql: "SELECT key FROM strata_values WHERE expiry IS NULL OR expiry > ?",
                    arguments: [now]
                ).map { String(decoding: $0, as: UTF8.self) }
            }
        } catch {
            throw mapError(error, key: nil, "cannot list keys")
        }
    }

    /// A snapshot of the database's totals and this instance's counters.
    public func statistics() throws(StorageError) -> StorageStatistics {
        let totals: Row?
        do {
            totals = try pool.read { db in try Row.fetchOne(db, sql: "SELECT count, bytes FROM strata_totals") }
        } catch {
            throw mapError(error, key: nil, "cannot read the totals")
        }
        return counters.statistics(count: totals?[0] ?? 0, totalCost: totals?[1] ?? 0)
    }
}
