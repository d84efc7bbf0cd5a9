public import Foundation
import GRDB
public import Strata
public import StrataObjects
import StrataSQLite
import Synchronization
import _StrataInternals

/// An object store backend in one SQLite file (WAL mode): a table of records, a table of
/// attachments, and the values of the indexes declared by key path, so a query on an indexed
/// property is answered by SQL instead of by decoding every object.
///
/// ```swift
/// let backend = try SQLiteObjectBackend<Note>(
///     path: "notes.sqlite",
///     indexes: [.init("priority", \.priority), .init("title", \.title)]
/// )
/// let notes = ObjectStore<Note>(backend: backend)
/// let urgent = try await notes.objects(indexed: "priority", .greaterThan(2), limit: 10)
/// ```
///
/// Records live in `strata_objects (key BLOB PRIMARY KEY, data BLOB)` (the key's UTF-8 bytes), attachments in
/// `strata_object_attachments`, index values in `strata_object_index_values`, ordered by an SQLite
/// index on (index name, value, key). Saving a record decodes it once as `Object` to compute its
/// index values, and writes the record and its values in one transaction. An index declared for
/// the first time is filled from the existing records when the file is opened.
///
/// Several versions of an app may share a file while declaring different indexes. An index this
/// opener does not declare is someone else's and is kept: a record saved here is listed in
/// `strata_object_index_pending` for it, and an opener that declares it recomputes those records'
/// values before it next answers a query on it (and when it opens the file), so every version's
/// queries stay right. ``dropUndeclaredIndexes()`` removes indexes that no version uses any more.
/// Keys and values reach SQL only as bound parameters; keys are stored NFC-normalized, as
/// `SQLiteStorage` stores them.
///
/// Reads run concurrently on GRDB's pool of readers and writes are serialized on its writer, off
/// the calling task's thread. Any task may use it, and several processes may share a file, each
/// declaring the indexes it uses.
public final class SQLiteObjectBackend<Object: Decodable & Sendable>: IndexedObjectStoreBackend, Sendable {
    /// The database file's path.
    public let path: String
    /// The indexes the backend keeps.
    public let indexes: [ObjectIndex<Object>]
    /// A short name for error messages.
    public let name: String
    let pool: DatabasePool
    private let isClosed = Atomic(false)

    /// Opens (creating if needed) the SQLite database at `path`, keeping `indexes`.
    ///
    /// Index names must be unique. Opening fills any index that is new to the file, which decodes
    /// every record once; records that cannot be decoded are left out of it.
    ///
    /// - Throws: `StorageError` code `StorageError/Code/corrupted` when the file is not a
    ///   SQLite database or is damaged, `StorageError/Code/invalidConfiguration` for duplicate
    ///   index names, `StorageError/Code/io` when it cannot be opened or created.
    public init(
        path: String,
        indexes: [ObjectIndex<Object>] = [],
        busyTimeout: Duration = .seconds(5)
    ) throws(StorageError) {
        self.path = path
        self.indexes = indexes
        self.name = "SQLiteObjectBackend(\(path))"
        try ObjectIndex.checkNamesAreUnique(indexes, storage: "SQLiteObjectBackend")
        var configuration = Configuration()
        configuration.label = "Strata.SQLiteObjectBackend"
        configuration.busyMode = .timeout(busyTimeout.timeInterval)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try Self.migrate(db)
                    try Self.prepareIndexes(db, indexes)
                    return .commit
                }
            }
        } catch {
            throw Self.openError(error, path: path)
        }
    }

    /// Closes the database; later calls throw `StorageError/Code/closed`. Calling it again does
    /// nothing.
    public func close() throws(StorageError) {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do {
            try pool.close()
        } catch {
            throw StorageError(.io, storage: name, message: "cannot close \(path)", underlying: error)
        }
    }

    /// The names of the indexes the backend keeps, in the order they were declared.
    public var indexNames: [String] { indexes.map(\.name) }

    // MARK: Schema

    private static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS strata_objects (
                    key BLOB NOT NULL PRIMARY KEY,
                    data BLOB NOT NULL
                );
                CREATE TABLE IF NOT EXISTS strata_object_attachments (
                    key BLOB NOT NULL,
                    name BLOB NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (key, name)
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS strata_object_indexes (
                    name TEXT NOT NULL PRIMARY KEY
                );
                CREATE TABLE IF NOT EXISTS strata_object_index_values (
                    name TEXT NOT NULL,
                    key BLOB NOT NULL,
                    value NOT NULL,
                    PRIMARY KEY (name, key)
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS strata_object_index_order
                    ON strata_object_index_values (name, value, key);
                CREATE TABLE IF NOT EXISTS strata_object_index_pending (
                    name TEXT NOT NULL,
                    key BLOB NOT NULL,
                    PRIMARY KEY (name, key)
                ) WITHOUT ROWID;
                """
        )
    }

    /// Fills the indexes new to the file and catches up the declared ones on records that
    /// openers not declaring them saved; keeps every index it does not declare.
    private static func prepareIndexes(_ db: Database, _ indexes: [ObjectIndex<Object>]) throws {
        let existing = Set(try String.fetchAll(db, sql: "SELECT name FROM strata_object_indexes"))
        let new = indexes.filter { !existing.contains($0.name) }
        if !new.isEmpty {
            let insert = try db.cachedStatement(
                sql: "INSERT OR REPLACE INTO strata_object_index_values (name, key, value) VALUES (?, ?, ?)"
            )
            let rows = try Row.fetchCursor(db, sql: "SELECT key, data FROM strata_objects")
            let decoder = ObjectCoding<Object>()
            while let row = try rows.next() {
                guard case .blob(let data) = (row[1] as DatabaseValue).storage,
                    let object = try? decoder.decode(data).object
                else { continue }
                let key: Data = row[0]
                for index in new {
                    if let value = index.value(of: object) {
                        try insert.execute(arguments: [index.name, key, value.databaseValue])
                    }
                }
            }
            for index in new {
                try db.execute(sql: "INSERT INTO strata_object_indexes (name) VALUES (?)", arguments: [index.name])
                try db.execute(sql: "DELETE FROM strata_object_index_pending WHERE name = ?", arguments: [index.name])
            }
        }
        for index in indexes where existing.contains(index.name) {
            try catchUp(db, index)
        }
    }

    /// Recomputes `index`'s values of the records that an opener not declaring it saved or
    /// removed since it was last caught up.
    private static func catchUp(_ db: Database, _ index: ObjectIndex<Object>) throws {
        let pending = try Data.fetchAll(
            db.cachedStatement(sql: "SELECT key FROM strata_object_index_pending WHERE name = ?"),
            arguments: [index.name]
        )
        guard !pending.isEmpty else { return }
        let decoder = ObjectCoding<Object>()
        let read = try db.cachedStatement(sql: "SELECT data FROM strata_objects WHERE key = ?")
        let remove = try db.cachedStatement(sql: "DELETE FROM strata_object_index_values WHERE name = ? AND key = ?")
        let insert = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO strata_object_index_values (name, key, value) VALUES (?, ?, ?)"
        )
        for key in pending {
            try remove.execute(arguments: [index.name, key])
            if let data = try Data.fetchOne(read, arguments: [key]),
                let object = try? decoder.decode(data).object,
                let value = index.value(of: object)
            {
                try insert.execute(arguments: [index.name, key, value.databaseValue])
            }
        }
        try db.execute(sql: "DELETE FROM strata_object_index_pending WHERE name = ?", arguments: [index.name])
    }

    /// Lists `storedKey` as pending for every index in the file that this opener does not declare,
    /// after a save or a removal changed the record those indexes were computed from.
    private func markPendingForUndeclaredIndexes(_ db: Database, _ storedKey: Data) throws {
        try db.cachedStatement(sql: undeclaredPendingSQL).execute(
            arguments: [storedKey] + StatementArguments(indexNames)
        )
    }

    /// Adds a key to the pending list of every index not among this opener's.
    private var undeclaredPendingSQL: String {
        let placeholders = Array(repeating: "?", count: indexes.count).joined(separator: ", ")
        return """
            INSERT OR IGNORE INTO strata_object_index_pending (name, key)
            SELECT name, ?1 FROM strata_object_indexes WHERE name NOT IN (\(placeholders))
            """
    }

    /// Removes the indexes, and their values, that this opener does not declare: call it once no
    /// version of the app that declares them opens the file any more.
    ///
    /// - Returns: The names of the indexes removed.
    @discardableResult
    public func dropUndeclaredIndexes() async throws(StorageError) -> [String] {
        let declared = Set(indexNames)
        do {
            return try await pool.write { db in
                let undeclared = try String.fetchAll(db, sql: "SELECT name FROM strata_object_indexes")
                    .filter { !declared.contains($0) }
                for name in undeclared {
                    try db.execute(sql: "DELETE FROM strata_object_index_values WHERE name = ?", arguments: [name])
                    try db.execute(sql: "DELETE FROM strata_object_index_pending WHERE name = ?", arguments: [name])
                    try db.execute(sql: "DELETE FROM strata_object_indexes WHERE name = ?", arguments: [name])
                }
                return undeclared.sorted()
            }
        } catch {
            throw mapError(error, key: nil, "cannot drop the undeclared indexes")
        }
    }

    // MARK: Errors

    private static func openError(_ error: any Error, path: String) -> StorageError {
        SQLiteErrors.opening(error, path: path, storage: "SQLiteObjectBackend")
    }

    private func mapError(_ error: any Error, key: String?, _ message: String) -> StorageError {
        SQLiteErrors.operation(
            error,
            key: key,
            message: message,
            path: path,
            storage: name,
            isClosed: isClosed.load(ordering: .acquiring),
            closedMessage: "the backend was closed"
        )
    }

    /// The key as stored: NFC-normalized, so keys Swift considers equal share one row (as
    /// attachment names do; see `String.storedSpellings`).
    private func normalized(_ key: String) -> String {
        key.storedSpelling
    }

    private func blob(_ value: DatabaseValue, key: String) throws(StorageError) -> Data {
        switch value.storage {
        case .blob(let data): return data
        case .string(let string): return Data(string.utf8)
        default:
            throw StorageError(
                .corrupted,
                key: key,
                storage: name,
                message: "the record in \(location(forKey: key)) is not a blob; something other than Strata wrote it"
            )
        }
    }

    // MARK: Records

    public func record(forKey key: String) async throws(StorageError) -> Data? {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        let value: DatabaseValue?
        do {
            value = try await pool.read { db in
                try DatabaseValue.fetchOne(
                    db.cachedStatement(sql: "SELECT data FROM strata_objects WHERE key = ?"),
                    arguments: [storedKey]
                )
            }
        } catch {
            throw mapError(error, key: key, "cannot read")
        }
        guard let value else { return nil }
        return try blob(value, key: key)
    }

    @discardableResult
    public func setRecord(_ record: Data, forKey key: String) async throws(StorageError) -> Bool {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        let indexValues = try indexes.values(of: record, key: key, storage: name)
        let hasIndexes = !indexes.isEmpty
        let values = indexValues
        do {
            return try await pool.write { db in
                let existed =
                    try Bool.fetchOne(
                        db.cachedStatement(sql: "SELECT 1 FROM strata_objects WHERE key = ?"),
                        arguments: [storedKey]
                    ) ?? false
                try db.cachedStatement(
                    sql: """
                        INSERT INTO strata_objects (key, data) VALUES (?, ?)
                        ON CONFLICT (key) DO UPDATE SET data = excluded.data
                        """
                ).execute(arguments: [storedKey, record])
                try db.cachedStatement(sql: "DELETE FROM strata_object_index_values WHERE key = ?")
                    .execute(arguments: [storedKey])
                if hasIndexes {
                    let insert = try db.cachedStatement(
                        sql: "INSERT INTO strata_object_index_values (name, key, value) VALUES (?, ?, ?)"
                    )
                    for value in values {
                        try insert.execute(arguments: [value.name, storedKey, value.value.databaseValue])
                    }
                }
                try self.markPendingForUndeclaredIndexes(db, storedKey)
                return existed
            }
        } catch {
            throw mapError(error, key: key, "cannot write")
        }
    }

    @discardableResult
    public func removeRecord(forKey key: String) async throws(StorageError) -> Bool {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        do {
            return try await pool.write { db in
                try db.cachedStatement(sql: "DELETE FROM strata_objects WHERE key = ?").execute(arguments: [storedKey])
                let removed = db.changesCount > 0
                try db.cachedStatement(sql: "DELETE FROM strata_object_attachments WHERE key = ?")
                    .execute(arguments: [storedKey])
                try db.cachedStatement(sql: "DELETE FROM strata_object_index_values WHERE key = ?")
                    .execute(arguments: [storedKey])
                if removed { try self.markPendingForUndeclaredIndexes(db, storedKey) }
                return removed
            }
        } catch {
            throw mapError(error, key: key, "cannot remove")
        }
    }

    public func keys() async throws(StorageError) -> [String] {
        do {
            return try await pool.read { db in
                try Data.fetchAll(db, sql: "SELECT key FROM strata_objects").map { String(decoding: $0, as: UTF8.self) }
            }
        } catch {
            throw mapError(error, key: nil, "cannot list keys")
        }
    }

    public func records() async throws(StorageError) -> [ObjectRecord] {
        let rows: [(String, DatabaseValue)]
        do {
            rows = try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT key, data FROM strata_objects").map { row in
                    (String(decoding: row[0] as Data, as: UTF8.self), row[1] as DatabaseValue)
                }
            }
        } catch {
            throw mapError(error, key: nil, "cannot read the records")
        }
        return rows.map { key, value in
            do throws(StorageError) {
                return ObjectRecord(key: key, data: .success(try blob(value, key: key)))
            } catch {
                return ObjectRecord(key: key, data: .failure(error))
            }
        }
    }

    public func location(forKey key: String) -> String {
        "\(path) (strata_objects, key '\(key)')"
    }

    // MARK: Indexes

    /// The keys of the records that match `query`, found by SQL on the index values alone: no
    /// record is read.
    ///
    /// - Throws: `StorageError/Code/invalidConfiguration` when no index is named `query.index`,
    ///   `StorageError/Code/io` when SQLite fails.
    public func keys(matching query: IndexQuery) async throws(StorageError) -> [String] {
        let index = try ObjectIndex.named(query.index, in: indexes, storage: name)
        var sql = "SELECT key FROM strata_object_index_values WHERE name = ?"
        var arguments: StatementArguments = [query.index]
        for (comparison, value) in query.condition.comparisons {
            sql += " AND value \(comparison) ?"
            arguments += [value.databaseValue]
        }
        sql += query.order == .ascending ? " ORDER BY value, key" : " ORDER BY value DESC, key"
        sql += " LIMIT ?"
        arguments += [query.limit.map { max(0, $0) } ?? -1]
        let finalSQL = sql
        let finalArguments = arguments
        do {
            // Another opener that does not declare the index saved records since: their values
            // are recomputed first. A read answers when there are none, as there usually are.
            let isPending = try await pool.read { db in
                try Bool.fetchOne(
                    db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM strata_object_index_pending WHERE name = ?)"),
                    arguments: [index.name]
                ) ?? false
            }
            if isPending {
                try await pool.write { db in try Self.catchUp(db, index) }
            }
            return try await pool.read { db in
                try Data.fetchAll(db.cachedStatement(sql: finalSQL), arguments: finalArguments)
                    .map { String(decoding: $0, as: UTF8.self) }
            }
        } catch {
            throw mapError(error, key: nil, "cannot query the index '\(query.index)'")
        }
    }

    // MARK: Attachments

    public func attachment(named name: String, forKey key: String) async throws(StorageError) -> Data? {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        // The stored spelling of the name first, then those an earlier version may have used.
        let names = name.storedSpellings.map { Data($0.utf8) }
        let value: DatabaseValue?
        do {
            value = try await pool.read { db in
                for name in names {
                    let value = try DatabaseValue.fetchOne(
                        db.cachedStatement(
                            sql: "SELECT data FROM strata_object_attachments WHERE key = ? AND name = ?"
                        ),
                        arguments: [storedKey, name]
                    )
                    if let value { return value }
                }
                return nil
            }
        } catch {
            throw mapError(error, key: key, "cannot read the attachment '\(name)'")
        }
        guard let value else { return nil }
        return try blob(value, key: key)
    }

    public func setAttachment(_ data: Data, named name: String, forKey key: String) async throws(StorageError) {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        guard !name.isEmpty else {
            throw StorageError(.invalidKey, key: key, storage: self.name, message: "an attachment needs a name")
        }
        let names = name.storedSpellings.map { Data($0.utf8) }
        do {
            try await pool.write { db in
                try db.cachedStatement(
                    sql: """
                        INSERT INTO strata_object_attachments (key, name, data) VALUES (?, ?, ?)
                        ON CONFLICT (key, name) DO UPDATE SET data = excluded.data
                        """
                ).execute(arguments: [storedKey, names[0], data])
                for earlier in names.dropFirst() {
                    try db.cachedStatement(sql: "DELETE FROM strata_object_attachments WHERE key = ? AND name = ?")
                        .execute(arguments: [storedKey, earlier])
                }
            }
        } catch {
            throw mapError(error, key: key, "cannot write the attachment '\(name)'")
        }
    }

    public func removeAttachment(named name: String, forKey key: String) async throws(StorageError) {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        let names = name.storedSpellings.map { Data($0.utf8) }
        do {
            try await pool.write { db in
                for name in names {
                    try db.cachedStatement(sql: "DELETE FROM strata_object_attachments WHERE key = ? AND name = ?")
                        .execute(arguments: [storedKey, name])
                }
            }
        } catch {
            throw mapError(error, key: key, "cannot remove the attachment '\(name)'")
        }
    }

    public func attachmentNames(forKey key: String) async throws(StorageError) -> [String] {
        let key = normalized(key)
        let storedKey = Data(key.utf8)
        do {
            return try await pool.read { db in
                // A name an earlier version stored in another spelling is listed in the stored one.
                var seen: Set<String> = []
                return try Data.fetchAll(
                    db.cachedStatement(sql: "SELECT name FROM strata_object_attachments WHERE key = ?"),
                    arguments: [storedKey]
                ).map { String(decoding: $0, as: UTF8.self).storedSpelling }.filter { seen.insert($0).inserted }
            }
        } catch {
            throw mapError(error, key: key, "cannot list the attachments")
        }
    }
}

extension IndexValue {
    /// The value as SQLite stores it: an INTEGER, a REAL or a TEXT.
    var databaseValue: DatabaseValue {
        switch self {
        case .integer(let value): value.databaseValue
        case .real(let value): value.databaseValue
        case .text(let value): value.databaseValue
        }
    }
}
