#if Hummingbird
import Foundation
import PostgresNIO
import Strata
@testable import StrataPostgres

/// The PostgreSQL server `STRATA_POSTGRES_URL` names, a fresh table per storage.
enum TestPostgres {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// Opens a storage on a fresh table; fails clearly when no server is set.
    static func storage(table: String? = nil) async throws -> PostgresStorage {
        guard let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"], !url.isEmpty else {
            throw Unavailable(
                description: """
                    STRATA_POSTGRES_URL is not set, so the PostgreSQL tests cannot run. Run scripts/test.sh \
                    (it starts a throwaway server), or start one with `eval "$(scripts/postgres.sh start)"`.
                    """
            )
        }
        let unique = "strata_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        var options = PostgresStorage.Options(table: table ?? String(unique))
        options.operationTimeout = .seconds(20)
        options.maximumConnections = 4
        return try await PostgresStorage(url: url, options: options)
    }

    /// Drops the storage's table and closes it.
    static func dispose(_ storage: PostgresStorage) async {
        let table = storage.table
        _ = try? await storage.perform("drop", key: nil) { connection in
            try await connection.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: PostgresStorage.logger)
            try await connection.query(
                "DROP FUNCTION IF EXISTS \(unescaped: table)_notify",
                logger: PostgresStorage.logger
            )
        }
        await storage.close()
    }
}
#endif
