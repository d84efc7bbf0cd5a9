#if Postgres
import Logging
package import PostgresNIO

extension PostgresConnection {
    /// Runs `body` in a transaction that first takes the advisory lock of `table`, so processes
    /// opening the same table at once change its schema one after another. Every table Strata
    /// creates (a storage's, an object backend's) is created this way.
    package func changingSchema<Result>(
        of table: String,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(table)))", logger: logger)
            return try await body(connection)
        }
    }

    /// Runs `statements` (schema changes without parameters) in one round trip: a `DO` block,
    /// whose transaction first takes the advisory lock of `table` as
    /// ``changingSchema(of:logger:_:)`` does, so the two take turns. A transaction of one query
    /// per statement waits for the server, and for a thread to run its task, once per statement:
    /// nine times for a storage's table, each behind every job queued on a busy cooperative pool.
    ///
    /// `table` is a valid table name (lowercase letters, digits and underscores, as
    /// `PostgresStorage` requires); the statements may hold `$$` strings but not `$strata$`.
    package func changeSchema(of table: String, statements: [String], logger: Logger) async throws {
        precondition(PostgresStorage.isValidTableName(table), "not a table name: \(table)")
        let body = statements.map { $0 + ";" }.joined(separator: "\n")
        let block = """
            DO $strata$ BEGIN
            PERFORM pg_advisory_xact_lock(hashtext('\(table)'));
            \(body)
            END $strata$
            """
        try await query(PostgresQuery(unsafeSQL: block), logger: logger)
    }
}
#endif
