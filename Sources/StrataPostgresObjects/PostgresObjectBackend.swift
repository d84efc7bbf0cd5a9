#if Postgres
public import Foundation
import Logging
import NIOCore
import PostgresNIO
public import Strata
public import StrataObjects
public import StrataPostgres

/// An object store backend in a PostgreSQL table: each record in a `JSONB` column, attachments
/// as `BYTEA`, and index values kept beside each record so an `IndexQuery` is answered by SQL.
///
/// ```swift
/// let database = try await PostgresStorage(url: "postgres://app@127.0.0.1:5432/app")
/// let backend = try await PostgresObjectBackend<Note>(
///     storage: database,
///     table: "notes",
///     indexes: [.init("priority", \.priority)]
/// )
/// let notes = ObjectStore<Note>(backend: backend)
/// ```
///
/// The backend borrows the `PostgresStorage`'s pool, time limits and error handling: close the
/// storage when done. Its tables are `<table> (key BYTEA PRIMARY KEY, data JSONB, indexes JSONB)`,
/// `<table>_attachments` and `<table>_indexes` (the names of the indexes filled). Keys, records, attachment names and query values reach the server
/// only as bound parameters. PostgreSQL normalizes `JSONB` (key order, spacing), so a record reads
/// back equal as JSON but not byte for byte (so `ObjectStore/reload()` reports the objects this
/// process saved since its last load as updated); and `JSONB` cannot hold the character U+0000, so
/// an object with it in a string is refused with `StorageError/Code/io`.
///
/// Keys and attachment names are stored in Unicode's NFC form, so IDs that Swift considers equal
/// (`"e\u{301}"` and `"\u{e9}"`) name one object, as in every Strata storage. A record or
/// attachment that an earlier version stored under another form is still read, and the next write
/// of it moves it to the stored form.
///
/// Saving a record decodes it once as `Object` to compute its index values. An index declared for
/// the first time is filled from the existing records when the backend is created (which decodes
/// each once).
///
/// Several versions of an app may share the table while declaring different indexes (a rolling
/// deploy). An index this backend does not declare is someone else's and is kept: a record saved
/// here is listed in `<table>_index_pending` for it, and a backend that declares it recomputes
/// those records' values before its next query on it (and when it is created), so every
/// version's queries stay right. ``dropUndeclaredIndexes()`` removes indexes no version uses any
/// more. Any task may use it.
public final class PostgresObjectBackend<Object: Decodable & Sendable>: IndexedObjectStoreBackend {
    /// The storage whose connections, time limits and lifetime the backend uses.
    public let storage: PostgresStorage
    /// The table holding the records.
    public let table: String
    /// The indexes the backend keeps.
    public let indexes: [ObjectIndex<Object>]
    /// A short name for error messages.
    public let name: String

    /// Creates the backend's tables when they are missing.
    ///
    /// - Throws: `StorageError` code `StorageError/Code/invalidConfiguration` for a table name
    ///   that is not lowercase letters, digits and underscores (at most 48), or duplicate index
    ///   names; the errors of the storage's operations otherwise.
    public init(
        storage: PostgresStorage,
        table: String = "strata_objects",
        indexes: [ObjectIndex<Object>] = []
    ) async throws(StorageError) {
        guard PostgresStorage.isValidTableName(table) else {
            throw StorageError(
                .invalidConfiguration,
                storage: "PostgresObjectBackend",
                message:
                    "the table name '\(table)' is not lowercase letters, digits and underscores (at most 48), or is a word PostgreSQL reserves"
            )
        }
        try ObjectIndex.checkNamesAreUnique(indexes, storage: "PostgresObjectBackend")
        self.storage = storage
        self.table = table
        self.indexes = indexes
        self.name = "PostgresObjectBackend(\(table))"
        try await perform("cannot create the table \(table)", key: nil) { connection in
            try await connection.changingSchema(of: table, logger: PostgresStorage.logger) { connection in
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                        key BYTEA PRIMARY KEY,
                        data JSONB NOT NULL,
                        indexes JSONB NOT NULL DEFAULT '{}'
                    )
                    """,
                    logger: PostgresStorage.logger
                )
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: table)_attachments (
                        key BYTEA NOT NULL,
                        name BYTEA NOT NULL,
                        data BYTEA NOT NULL,
                        PRIMARY KEY (key, name)
                    )
                    """,
                    logger: PostgresStorage.logger
                )
                try await connection.query(
                    "CREATE TABLE IF NOT EXISTS \(unescaped: table)_indexes (name TEXT PRIMARY KEY)",
                    logger: PostgresStorage.logger
                )
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: table)_index_pending (
                        name TEXT NOT NULL,
                        key BYTEA NOT NULL,
                        PRIMARY KEY (name, key)
                    )
                    """,
                    logger: PostgresStorage.logger
                )
                try await Self.prepareIndexes(indexes, table: table, on: connection)
            }
        }
        // Outside the creation's transaction, so that it holds no lock while it catches up.
        try await perform("cannot catch up the indexes of \(table)", key: nil) { connection in
            for index in indexes {
                try await Self.catchUp(index, table: table, on: connection)
            }
        }
    }

    /// Fills the indexes new to the table from its records; keeps every index it does not declare.
    private static func prepareIndexes(
        _ indexes: [ObjectIndex<Object>],
        table: String,
        on connection: PostgresConnection
    ) async throws {
        let rows = try await connection.query(
            "SELECT name FROM \(unescaped: table)_indexes",
            logger: PostgresStorage.logger
        )
        var existing: Set<String> = []
        for try await name in rows.decode(String.self) { existing.insert(name) }
        for index in indexes where isLiteralIndexName(index.name) {
            let (kind, number, text) = expressions(name: "'\(index.name)'")
            try await connection.query(
                """
                CREATE INDEX IF NOT EXISTS \(unescaped: btreeName(table: table, index: index.name))
                ON \(unescaped: table) (\(unescaped: kind), \(unescaped: number), \(unescaped: text), key)
                """,
                logger: PostgresStorage.logger
            )
        }
        let new = indexes.filter { !existing.contains($0.name) }
        guard !new.isEmpty else { return }
        let records = try await connection.query(
            "SELECT key, data::text FROM \(unescaped: table)",
            logger: PostgresStorage.logger
        )
        var updates: [(key: Data, values: String)] = []
        let decoder = ObjectCoding<Object>()
        for try await (key, text) in records.decode((Data, String).self) {
            // A record that does not decode is left out of the index; ObjectStore.verify() reports it.
            guard let object = try? decoder.decode(Data(text.utf8)).object else { continue }
            var values: [String: JSONIndexValue] = [:]
            for index in new {
                if let value = index.value(of: object) { values[index.name] = JSONIndexValue(value: value) }
            }
            if !values.isEmpty {
                updates.append((key, String(decoding: try JSONEncoder().encode(values), as: UTF8.self)))
            }
        }
        for update in updates {
            try await connection.query(
                "UPDATE \(unescaped: table) SET indexes = indexes || \(update.values)::jsonb WHERE key = \(update.key)",
                logger: PostgresStorage.logger
            )
        }
        for index in new {
            try await connection.query(
                "INSERT INTO \(unescaped: table)_indexes (name) VALUES (\(index.name)) ON CONFLICT DO NOTHING",
                logger: PostgresStorage.logger
            )
            try await connection.query(
                "DELETE FROM \(unescaped: table)_index_pending WHERE name = \(index.name)",
                logger: PostgresStorage.logger
            )
        }
    }

    /// Recomputes `index`'s values of the records that backends not declaring it saved since it
    /// was last caught up.
    ///
    /// Each statement runs on its own and locks one row at most, so it cannot deadlock with a
    /// concurrent save: a pending entry is removed before its record is read, and the value is
    /// written only if the record is still the one read; if a save came between, the entry is
    /// listed again and the next catch-up takes it.
    static func catchUp(
        _ index: ObjectIndex<Object>,
        table: String,
        on connection: PostgresConnection
    ) async throws {
        let pending = try await connection.query(
            "SELECT key FROM \(unescaped: table)_index_pending WHERE name = \(index.name)",
            logger: PostgresStorage.logger
        )
        var keys: [Data] = []
        for try await key in pending.decode(Data.self) { keys.append(key) }
        let decoder = ObjectCoding<Object>()
        for key in keys {
            try await connection.query(
                "DELETE FROM \(unescaped: table)_index_pending WHERE name = \(index.name) AND key = \(key)",
                logger: PostgresStorage.logger
            )
            let records = try await connection.query(
                "SELECT data::text FROM \(unescaped: table) WHERE key = \(key)",
                logger: PostgresStorage.logger
            )
            var text: String?
            for try await data in records.decode(String.self) { text = data }
            // A record removed since has no index values left to fix.
            guard let text else { continue }
            let value = try (try? decoder.decode(Data(text.utf8)).object)
                .flatMap(index.value(of:))
                .map {
                    String(decoding: try JSONEncoder().encode([index.name: JSONIndexValue(value: $0)]), as: UTF8.self)
                }
            let updated = try await connection.query(
                """
                UPDATE \(unescaped: table) SET indexes = (indexes - \(index.name)) || \(value ?? "{}")::jsonb
                WHERE key = \(key) AND data = \(text)::jsonb
                RETURNING 1
                """,
                logger: PostgresStorage.logger
            )
            var matched = false
            for try await _ in updated.decode(Int.self) { matched = true }
            if !matched {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table)_index_pending (name, key) VALUES (\(index.name), \(key))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: PostgresStorage.logger
                )
            }
        }
    }

    /// Removes the indexes, their values and their B-tree indexes that this backend does not
    /// declare: call it once no version of the app that declares them uses the table any more.
    ///
    /// - Returns: The names of the indexes removed.
    @discardableResult
    public func dropUndeclaredIndexes() async throws(StorageError) -> [String] {
        let (table, declared) = (table, indexNames)
        return try await perform("cannot drop the undeclared indexes", key: nil) { connection in
            try await connection.withTransaction(logger: PostgresStorage.logger) { connection in
                let rows = try await connection.query(
                    "SELECT name FROM \(unescaped: table)_indexes WHERE NOT (name = ANY(\(declared)))",
                    logger: PostgresStorage.logger
                )
                var undeclared: [String] = []
                for try await name in rows.decode(String.self) { undeclared.append(name) }
                for name in undeclared {
                    try await connection.query(
                        "DROP INDEX IF EXISTS \(unescaped: Self.btreeName(table: table, index: name))",
                        logger: PostgresStorage.logger
                    )
                    try await connection.query(
                        "UPDATE \(unescaped: table) SET indexes = indexes - \(name) WHERE indexes ? \(name)",
                        logger: PostgresStorage.logger
                    )
                    try await connection.query(
                        "DELETE FROM \(unescaped: table)_index_pending WHERE name = \(name)",
                        logger: PostgresStorage.logger
                    )
                    try await connection.query(
                        "DELETE FROM \(unescaped: table)_indexes WHERE name = \(name)",
                        logger: PostgresStorage.logger
                    )
                }
                return undeclared.sorted()
            }
        }
    }

    /// The names of the indexes the backend keeps, in the order they were declared.
    public var indexNames: [String] { indexes.map(\.name) }

    /// Runs `operation` through the storage's pool and time limit, naming this backend in errors.
    @discardableResult
    func perform<Value: Sendable>(
        _ action: String,
        key: String?,
        _ operation: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws(StorageError) -> Value {
        do {
            return try await storage.perform(action, key: key, operation)
        } catch {
            var error = error
            error.storage = name
            throw error
        }
    }

    // MARK: Records

    public func record(forKey key: String) async throws(StorageError) -> Data? {
        let table = table
        let spellings = Self.spellings(of: key)
        let stored = spellings[0]
        return try await perform("cannot read", key: key) { connection in
            let rows = try await connection.query(
                """
                SELECT data::text FROM \(unescaped: table) WHERE key = ANY(\(spellings))
                ORDER BY key = \(stored) DESC LIMIT 1
                """,
                logger: PostgresStorage.logger
            )
            for try await text in rows.decode(String.self) {
                return Data(text.utf8)
            }
            return nil
        }
    }

    @discardableResult
    public func setRecord(_ record: Data, forKey key: String) async throws(StorageError) -> Bool {
        let indexValues = try indexValues(of: record, key: key)
        let table = table
        let spellings = Self.spellings(of: key)
        let stored = spellings[0]
        let json = String(decoding: record, as: UTF8.self)
        let declared = indexNames
        return try await perform("cannot write", key: key) { connection in
            // The values of indexes this backend does not declare are computed by the backends
            // that do, which the pending list tells.
            let rows = try await connection.query(
                """
                WITH old AS (SELECT 1 FROM \(unescaped: table) WHERE key = ANY(\(spellings))),
                pending AS (
                    INSERT INTO \(unescaped: table)_index_pending (name, key)
                    SELECT name, \(stored) FROM \(unescaped: table)_indexes WHERE NOT (name = ANY(\(declared)))
                    ON CONFLICT DO NOTHING
                )
                INSERT INTO \(unescaped: table) (key, data, indexes)
                VALUES (\(stored), \(json)::jsonb, \(indexValues)::jsonb)
                ON CONFLICT (key) DO UPDATE SET data = excluded.data, indexes = excluded.indexes
                RETURNING (SELECT count(*) FROM old)::bigint
                """,
                logger: PostgresStorage.logger
            )
            var existed = false
            for try await count in rows.decode(Int.self) {
                existed = count > 0
            }
            if spellings.count > 1 {
                try await Self.adoptEarlierSpellings(Array(spellings.dropFirst()), as: stored, table: table, connection)
            }
            return existed
        }
    }

    /// `key`'s spellings as the `key` column holds them, the stored one first (see
    /// `String.storedSpellings`): a record or attachment an earlier version filed under another
    /// spelling is still read, and the next write moves it to the stored one.
    private static func spellings(of key: String) -> [ByteBuffer] {
        key.storedSpellings.map { ByteBuffer(string: $0) }
    }

    /// After a write of `stored`'s record: moves the attachments of the `earlier` spellings of its
    /// key to it (but for names it has), then removes what is left of them. The write comes
    /// first, so that a failure between the statements leaves the record under both spellings,
    /// read as the stored one and moved by the next write, never under neither.
    private static func adoptEarlierSpellings(
        _ earlier: [ByteBuffer],
        as stored: ByteBuffer,
        table: String,
        _ connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            WITH moving AS (
                SELECT DISTINCT ON (name) key, name FROM \(unescaped: table)_attachments
                WHERE key = ANY(\(earlier))
                AND name NOT IN (SELECT name FROM \(unescaped: table)_attachments WHERE key = \(stored))
                ORDER BY name, key
            )
            UPDATE \(unescaped: table)_attachments AS a SET key = \(stored)
            FROM moving WHERE a.key = moving.key AND a.name = moving.name
            """,
            logger: PostgresStorage.logger
        )
        // What is left of them: attachments the stored spelling had, pending index work, records.
        for removed in [table + "_attachments", table + "_index_pending", table] {
            try await connection.query(
                "DELETE FROM \(unescaped: removed) WHERE key = ANY(\(earlier))",
                logger: PostgresStorage.logger
            )
        }
    }

    /// The JSON object of `record`'s index values, by index name.
    private func indexValues(of record: Data, key: String) throws(StorageError) -> String {
        var values: [String: JSONIndexValue] = [:]
        for (name, value) in try indexes.values(of: record, key: key, storage: name) {
            values[name] = JSONIndexValue(value: value)
        }
        do {
            return String(decoding: try JSONEncoder().encode(values), as: UTF8.self)
        } catch {
            throw StorageError(
                .encodingFailed,
                key: key,
                storage: name,
                message: "the index values cannot be encoded as JSON (a real number that is infinite?)",
                underlying: error
            )
        }
    }

    @discardableResult
    public func removeRecord(forKey key: String) async throws(StorageError) -> Bool {
        let table = table
        let spellings = Self.spellings(of: key)
        return try await perform("cannot remove", key: key) { connection in
            let rows = try await connection.query(
                """
                WITH gone AS (DELETE FROM \(unescaped: table) WHERE key = ANY(\(spellings)) RETURNING 1),
                attachments AS (DELETE FROM \(unescaped: table)_attachments WHERE key = ANY(\(spellings)))
                SELECT count(*)::bigint FROM gone
                """,
                logger: PostgresStorage.logger
            )
            var removed = false
            for try await count in rows.decode(Int.self) {
                removed = count > 0
            }
            return removed
        }
    }

    public func keys() async throws(StorageError) -> [String] {
        let table = table
        return try await perform("cannot list keys", key: nil) { connection in
            let rows = try await connection.query("SELECT key FROM \(unescaped: table)", logger: PostgresStorage.logger)
            var keys: [String] = []
            for try await key in rows.decode(Data.self) {
                keys.append(String(decoding: key, as: UTF8.self))
            }
            return keys
        }
    }

    public func records() async throws(StorageError) -> [ObjectRecord] {
        let table = table
        return try await perform("cannot read the records", key: nil) { connection in
            let rows = try await connection.query(
                "SELECT key, data::text FROM \(unescaped: table)",
                logger: PostgresStorage.logger
            )
            var records: [ObjectRecord] = []
            for try await (key, text) in rows.decode((Data, String).self) {
                records.append(ObjectRecord(key: String(decoding: key, as: UTF8.self), data: .success(Data(text.utf8))))
            }
            return records
        }
    }

    public func location(forKey key: String) -> String {
        "PostgreSQL table \(table), key '\(key)'"
    }

    // MARK: Attachments

    public func attachment(named name: String, forKey key: String) async throws(StorageError) -> Data? {
        let table = table
        let keys = Self.spellings(of: key)
        let names = Self.spellings(of: name)
        return try await perform("cannot read the attachment", key: key) { connection in
            let rows = try await connection.query(
                """
                SELECT data FROM \(unescaped: table)_attachments WHERE key = ANY(\(keys)) AND name = ANY(\(names))
                ORDER BY key = \(keys[0]) DESC, name = \(names[0]) DESC LIMIT 1
                """,
                logger: PostgresStorage.logger
            )
            for try await data in rows.decode(Data.self) {
                return data
            }
            return nil
        }
    }

    public func setAttachment(_ data: Data, named name: String, forKey key: String) async throws(StorageError) {
        guard !name.isEmpty else {
            throw StorageError(.invalidKey, key: key, storage: self.name, message: "an attachment needs a name")
        }
        let table = table
        let keys = Self.spellings(of: key)
        let names = Self.spellings(of: name)
        try await perform("cannot write the attachment", key: key) { connection in
            if keys.count > 1 {
                try await Self.moveEarlierRecord(Array(keys.dropFirst()), to: keys[0], table: table, connection)
            }
            try await connection.query(
                """
                INSERT INTO \(unescaped: table)_attachments (key, name, data) VALUES (\(keys[0]), \(names[0]), \(data))
                ON CONFLICT (key, name) DO UPDATE SET data = excluded.data
                """,
                logger: PostgresStorage.logger
            )
            if names.count > 1 {
                let earlier = Array(names.dropFirst())
                try await connection.query(
                    "DELETE FROM \(unescaped: table)_attachments WHERE key = \(keys[0]) AND name = ANY(\(earlier))",
                    logger: PostgresStorage.logger
                )
            }
        }
    }

    /// Before an attachment is written under the stored spelling of its key: moves a record an
    /// earlier version filed under another spelling to the stored one (unless it has one), and
    /// that record's attachments with it.
    private static func moveEarlierRecord(
        _ earlier: [ByteBuffer],
        to stored: ByteBuffer,
        table: String,
        _ connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            INSERT INTO \(unescaped: table) (key, data, indexes)
            SELECT \(stored), data, indexes FROM \(unescaped: table) WHERE key = ANY(\(earlier)) LIMIT 1
            ON CONFLICT (key) DO NOTHING
            """,
            logger: PostgresStorage.logger
        )
        try await adoptEarlierSpellings(earlier, as: stored, table: table, connection)
    }

    public func removeAttachment(named name: String, forKey key: String) async throws(StorageError) {
        let table = table
        let keys = Self.spellings(of: key)
        let names = Self.spellings(of: name)
        try await perform("cannot remove the attachment", key: key) { connection in
            try await connection.query(
                "DELETE FROM \(unescaped: table)_attachments WHERE key = ANY(\(keys)) AND name = ANY(\(names))",
                logger: PostgresStorage.logger
            )
        }
    }

    public func attachmentNames(forKey key: String) async throws(StorageError) -> [String] {
        let table = table
        let keys = Self.spellings(of: key)
        return try await perform("cannot list the attachments", key: key) { connection in
            let rows = try await connection.query(
                "SELECT name FROM \(unescaped: table)_attachments WHERE key = ANY(\(keys))",
                logger: PostgresStorage.logger
            )
            var names: [String] = []
            var seen: Set<String> = []
            for try await name in rows.decode(Data.self) {
                // A name an earlier version stored in another spelling is listed in the stored one.
                let text = String(decoding: name, as: UTF8.self).storedSpelling
                if seen.insert(text).inserted { names.append(text) }
            }
            return names
        }
    }
}

/// An `IndexValue` as a JSON number or string.
private struct JSONIndexValue: Encodable {
    var value: IndexValue

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch value {
        case .integer(let integer): try container.encode(integer)
        case .real(let real): try container.encode(real)
        case .text(let string): try container.encode(string)
        }
    }
}
#endif
