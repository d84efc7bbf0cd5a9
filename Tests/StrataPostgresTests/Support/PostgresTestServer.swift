import Foundation
import PostgresNIO
import Strata
import Testing

@testable import StrataPostgres

/// The PostgreSQL server the tests use: the one `STRATA_POSTGRES_URL` names. Tests never skip
/// without one: they fail, saying how to start one.
enum PostgresTestServer {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// The server's URL, or an error saying how to get one.
    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"], !url.isEmpty else {
            throw Unavailable(
                description: """
                    STRATA_POSTGRES_URL is not set, so the PostgreSQL tests cannot run. Run scripts/test.sh \
                    (it starts a throwaway server), or start one with `eval "$(scripts/postgres.sh start)"`.
                    """
            )
        }
        return url
    }

    /// A table name no other test uses.
    static func uniqueTable() -> String {
        "strata_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }

    /// Opens a storage on a fresh table of the test server; fails clearly when there is none.
    static func storage(
        table: String = uniqueTable(),
        configure: (inout PostgresStorage.Options) -> Void = { _ in }
    ) async throws -> PostgresStorage {
        let url = try url()
        var options = PostgresStorage.Options(table: table)
        options.operationTimeout = .seconds(20)
        options.maximumConnections = 6
        configure(&options)
        do {
            return try await PostgresStorage(url: url, options: options)
        } catch {
            throw Unavailable(description: "cannot use the PostgreSQL server at \(url): \(error)")
        }
    }

    /// Drops the storage's table and closes it.
    static func dispose(_ storage: PostgresStorage) async {
        await dropTableKeepingStorageOpen(storage)
        await storage.close()
    }

    /// Drops the storage's table behind its back.
    static func dropTableKeepingStorageOpen(_ storage: PostgresStorage) async {
        let table = storage.table
        _ = try? await storage.perform("drop", key: nil) { connection in
            try await connection.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: PostgresStorage.logger)
            try await connection.query(
                "DROP FUNCTION IF EXISTS \(unescaped: table)_notify",
                logger: PostgresStorage.logger
            )
        }
    }
}
