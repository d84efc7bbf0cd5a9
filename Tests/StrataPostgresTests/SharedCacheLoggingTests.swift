#if Postgres
import Foundation
import Logging
import PostgresNIO
import Strata
import StrataTestSupport
import Testing

@testable import StrataPostgres

/// What a SharedCache logs when its listening connection is cut: the loss once at `.warning`, the
/// reconnect once at `.notice` with its reason; never a key or a value.
@Suite struct SharedCacheLoggingTests {
    @Test func aLostListeningConnectionIsLoggedAndSoIsTheReconnect() async throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .info)
        let storage = try await PostgresTestServer.storage { $0.logger = logger }
        let (invalidations, continuation) = AsyncStream.makeStream(of: SharedCache.Invalidation.self)
        // No heartbeat during the test: a beat runs on the listening connection, and its query then
        // no longer reads LISTEN, which is how the terminate below finds the connection (under a
        // full parallel run the steps before it can take longer than the 2 s default).
        let cache = try await storage.sharedCache(
            heartbeatInterval: .seconds(3_600),
            onInvalidation: { continuation.yield($0) }
        )
        try await cache.set(Data("secret value".utf8), forKey: "secret-key")
        let admin = try await PostgresTestServer.storage(table: storage.table)
        let name = storage.instanceName

        // Cut the cache's listening connection from another connection, as a server restart or a
        // network failure would.
        let terminated = try await admin.perform("terminate", key: nil) { connection in
            let rows = try await connection.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE application_name = \(name) AND query LIKE 'LISTEN%'
                """,
                logger: PostgresStorage.logger
            )
            var count = 0
            for try await _ in rows { count += 1 }
            return count
        }
        // Without a terminated connection no invalidation would come: fail rather than wait.
        try #require(terminated == 1)
        // Memory is dropped when the connection goes and again when notifications flow anew.
        var allCount = 0
        for await invalidation in invalidations where invalidation == .all {
            allCount += 1
            if allCount == 2 { break }
        }
        var entries = handler.entries
        for _ in 0..<500 where !entries.contains(where: { $0.level == .notice }) {
            try await Task.sleep(for: .milliseconds(10))  // the notice follows the second invalidation
            entries = handler.entries
        }

        #expect(terminated == 1)
        let warnings = entries.filter { $0.level == .warning }
        let notices = entries.filter { $0.level == .notice }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains("lost its listening connection") == true)
        #expect(notices.count == 1)
        #expect(notices.first?.message.contains("reconnected") == true)
        #expect(notices.first?.metadata["reason"]?.isEmpty == false)
        #expect(entries.allSatisfy { !$0.fullText.contains("secret") })
        await cache.close()
        await admin.close()
        await PostgresTestServer.dispose(storage)
    }
}
#endif
