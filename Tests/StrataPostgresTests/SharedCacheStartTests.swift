#if Postgres
import Foundation
import PostgresNIO
import Strata
import StrataTestSupport
import Synchronization
import Testing

@testable import StrataPostgres

/// A shared cache that cannot start listening says so within its storage's operation limit.
@Suite struct SharedCacheStartTests {
    @Test func aCacheThatCannotGetAListeningConnectionFailsWithinTheLimit() async throws {
        let storage = try await Self.storageWithALimitOfOneSecond()
        // Both of the storage's connections are busy for 4 s: the listener gets none in time.
        let leased = LeaseCount()
        let held = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await storage.client.withConnection { connection in
                            leased.count.add(1, ordering: .relaxed)
                            _ = try await connection.query("SELECT pg_sleep(4)", logger: PostgresStorage.logger)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        while leased.count.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(10)) }

        let (error, elapsed) = await TestThreads.timed {
            await #expect(throws: StorageError.self) { try await storage.sharedCache() }
        }

        #expect(error?.code == .io)
        #expect(error?.message.contains("could not start listening") == true, "\(String(describing: error))")
        #expect(
            elapsed < storage.options.operationTimeout + .seconds(1),
            "the 1-second limit reported after \(elapsed)"
        )
        try await held.value
        await PostgresTestServer.dispose(storage)
    }

    /// A storage of two connections and a 1-second limit. Its connections are made by
    /// postgres-nio's own task on the cooperative pool, which the first seconds of a parallel run
    /// can keep busy past the limit (five tries in a row, 6.5 s, once timed out in a bare run): a
    /// creation that times out is tried again for up to 30 s. Only the setup is retried; the limit
    /// under test is not.
    static func storageWithALimitOfOneSecond() async throws -> PostgresStorage {
        let giveUp = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await PostgresTestServer.storage {
                    $0.maximumConnectionCount = 2
                    $0.operationTimeout = .seconds(1)
                }
            } catch  where ContinuousClock.now < giveUp {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

/// How many connections the test holds.
private final class LeaseCount: Sendable {
    let count = Atomic(0)
}
#endif
