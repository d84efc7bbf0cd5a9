#if Hummingbird && Postgres
import Foundation
import Strata
import StrataPostgres
import StrataTestSupport

/// The PostgreSQL server `STRATA_POSTGRES_URL` names, a fresh table per storage.
enum TestPostgres {
    /// Opens a storage on `table`, or a fresh one, whose values live `timeToLive` unless a write
    /// says otherwise; fails clearly when no server is set.
    static func storage(table: String? = nil, timeToLive: Duration? = nil) async throws -> PostgresStorage {
        let url = try PostgresTestEnvironment.url()
        var options = PostgresStorage.Options(table: table ?? PostgresTestEnvironment.uniqueTable())
        options.timeToLive = timeToLive
        options.operationTimeout = .seconds(20)
        options.maximumConnectionCount = 4
        return try await PostgresStorage(url: url, options: options)
    }

    /// Drops the storage's table and closes it.
    static func dispose(_ storage: PostgresStorage) async {
        await storage.dropTableForTesting()
        await storage.close()
    }
}
#endif
