#if Postgres
import Foundation
import Logging
import NIOCore
import PostgresNIO
public import Strata
public import StrataObjects
import StrataPostgres

extension PostgresObjectBackend {
    // MARK: Indexes

    /// The keys of the records that match `query`, found by SQL on the `indexes` column alone.
    ///
    /// Values order as `IndexValue` orders them: numbers (compared as `numeric`) before strings
    /// (compared byte by byte, `COLLATE "C"`).
    ///
    /// An index whose name is ASCII letters, digits and underscores (at most 40 of them) has a
    /// B-tree index on these expressions, created with the backend; a query on any other name
    /// scans the table (still without reading a record into Swift).
    ///
    /// - Throws: `StorageError/Code/invalidConfiguration` when no index is named `query.index`,
    ///   or the errors of the storage's operations.
    public func keys(matching query: IndexQuery) async throws(StorageError) -> [String] {
        let index = try ObjectIndex.named(query.index, in: indexes, storage: name)
        let statement = Self.statement(for: query, table: table)
        let table = table
        return try await perform("cannot query the index '\(query.index)'", key: nil) { connection in
            // Another backend that does not declare the index saved records since: their values
            // are recomputed first.
            let pending = try await connection.query(
                "SELECT EXISTS (SELECT 1 FROM \(unescaped: table)_index_pending WHERE name = \(index.name))",
                logger: PostgresStorage.logger
            )
            var isPending = false
            for try await exists in pending.decode(Bool.self) { isPending = exists }
            if isPending {
                try await Self.catchUp(index, table: table, on: connection)
            }
            let rows = try await connection.query(statement, logger: PostgresStorage.logger)
            var keys: [String] = []
            for try await key in rows.decode(Data.self) {
                keys.append(String(decoding: key, as: UTF8.self))
            }
            return keys
        }
    }

    // MARK: Index expressions

    /// Whether `name` may be written into SQL as a literal: ASCII letters, digits and underscores,
    /// at most 40. Only such indexes get a B-tree index on their expressions, which the planner
    /// can match only when the query spells the name the same way; any other name is bound.
    static func isLiteralIndexName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 40
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            }
    }

    /// The expressions of an index's value in `indexes`, given how the name is spelled: its kind
    /// (0 for a number, 1 for a string, NULL for none), its number and its text.
    static func expressions(name: String) -> (kind: String, number: String, text: String) {
        (
            "(CASE jsonb_typeof(indexes -> \(name)) WHEN 'number' THEN 0 WHEN 'string' THEN 1 END)",
            "(CASE WHEN jsonb_typeof(indexes -> \(name)) = 'number' THEN (indexes ->> \(name))::numeric END)",
            "((CASE WHEN jsonb_typeof(indexes -> \(name)) = 'string' THEN (indexes ->> \(name)) END) COLLATE \"C\")"
        )
    }

    /// The name of the B-tree index on the expressions of the index `name`: the table's name and
    /// 12 hex digits of a hash of `name`, within PostgreSQL's 63 characters.
    static func btreeName(table: String, index name: String) -> String {
        let hex = String(FNV1a.hash(name.utf8), radix: 16)
        return table + "_" + String((String(repeating: "0", count: 16) + hex).suffix(12))
    }

    /// The statement that finds the keys matching `query`; every value is a bound parameter.
    static func statement(for query: IndexQuery, table: String) -> PostgresQuery {
        var binds = PostgresBindings()
        let name: String
        if isLiteralIndexName(query.index) {
            name = "'\(query.index)'"
        } else {
            binds.append(query.index)
            name = "$1"
        }
        let (kind, number, text) = expressions(name: name)
        func compare(_ comparison: String, _ value: IndexValue) -> String {
            let parameter: String
            let valueKind: Int
            switch value {
            case .integer(let integer):
                binds.append(integer)
                parameter = "$\(binds.count)::numeric"
                valueKind = 0
            case .real(let real):
                binds.append(real)
                parameter = "$\(binds.count)::numeric"
                valueKind = 0
            case .text(let string):
                binds.append(string)
                parameter = "$\(binds.count)::text"
                valueKind = 1
            }
            let field = valueKind == 0 ? number : text
            let same = "(\(kind) = \(valueKind) AND \(field) \(comparison) \(parameter))"
            switch comparison {
            case "<", "<=": return "(\(kind) < \(valueKind) OR \(same))"
            case ">", ">=": return "(\(kind) > \(valueKind) OR \(same))"
            default: return same
            }
        }
        let comparisons = query.condition.comparisons.map { compare($0.operator, $0.value) }
        let condition =
            comparisons.isEmpty ? "\(kind) IS NOT NULL" : "(" + comparisons.joined(separator: " AND ") + ")"
        let direction = query.order == .ascending ? "ASC" : "DESC"
        var sql = """
            SELECT key FROM \(table) WHERE \(condition)
            ORDER BY \(kind) \(direction), \(number) \(direction), \(text) \(direction), key ASC
            """
        if let limit = query.limit {
            binds.append(max(0, limit))
            sql += " LIMIT $\(binds.count)"
        }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
#endif
