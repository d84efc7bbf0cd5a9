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
}
#endif
