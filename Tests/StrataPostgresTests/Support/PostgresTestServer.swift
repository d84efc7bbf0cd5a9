#if Postgres
import Foundation
import PostgresNIO
import Strata
import StrataTestSupport
import Testing

@testable import StrataPostgres

/// The PostgreSQL server the tests use: the one `STRATA_POSTGRES_URL` names. Tests never skip
/// without one: they fail, saying how to start one.
enum PostgresTestServer {
    /// The server's URL, or an error saying how to get one.
    static func url() throws -> String {
        try PostgresTestEnvironment.url()
    }

    /// A table name no other test uses.
    static func uniqueTable() -> String {
        PostgresTestEnvironment.uniqueTable()
    }

    /// Opens a storage on a fresh table of the test server; fails clearly when there is none.
    static func storage(
        table: String = uniqueTable(),
        configure: (inout PostgresStorage.Options) -> Void = { _ in }
    ) async throws -> PostgresStorage {
        let url = try url()
        var options = PostgresStorage.Options(table: table)
        options.operationTimeout = .seconds(20)
        options.maximumConnectionCount = 6
        configure(&options)
        do {
            return try await PostgresStorage(url: url, options: options)
        } catch {
            throw PostgresTestEnvironment.Unavailable(
                description: "cannot use the PostgreSQL server at \(url): \(error)"
            )
        }
    }

    /// Drops the storage's table and closes it.
    static func dispose(_ storage: PostgresStorage) async {
        await dropTableKeepingStorageOpen(storage)
        await storage.close()
    }

    /// Drops the storage's table behind its back.
    static func dropTableKeepingStorageOpen(_ storage: PostgresStorage) async {
        await storage.dropTableForTesting()
    }
}
#endif
