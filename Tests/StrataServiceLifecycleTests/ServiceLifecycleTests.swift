#if ServiceLifecycle && Postgres
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import ServiceLifecycleTestKit
import Strata
import StrataPostgres
import StrataServiceLifecycle
import StrataTestSupport
import Testing
import _StrataInternals

/// Strata's storages as services of an app's `ServiceGroup`: a graceful shutdown lets writes in
/// flight finish, then closes, and loses no write that was acknowledged.
///
/// Needs `STRATA_POSTGRES_URL`, as the PostgreSQL suites do.
@Suite struct ServiceLifecycleTests {
    static let logger = Logger(label: "strata.tests.lifecycle", factory: { _ in SwiftLogNoOpLogHandler() })

    static func url() throws -> String { try PostgresTestEnvironment.url() }

    static func uniqueTable() -> String { PostgresTestEnvironment.uniqueTable() }

    static func options(table: String) -> PostgresStorage.Options {
        var options = PostgresStorage.Options(table: table)
        options.operationTimeout = .seconds(20)
        options.maximumConnectionCount = 4
        return options
    }

    /// Keys whose writes returned without an error.
    final class Acknowledged: Sendable {
        private let keys = LockedKeys()
        func append(_ key: String) { keys.append(key) }
        var all: [String] { keys.all }
    }

    @Test func aGracefulShutdownFinishesWritesInFlightAndLosesNoAcknowledgedOne() async throws {
        let table = Self.uniqueTable()
        let storage = try await PostgresStorage(url: try Self.url(), options: Self.options(table: table))
        let acknowledged = Acknowledged()
        let refusals = try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: [StorageError].self) { group in
                group.addTask {
                    try await storage.run()
                    return []
                }
                for writer in 0..<8 {
                    group.addTask {
                        var errors: [StorageError] = []
                        for index in 0..<10_000 {
                            let key = "w\(writer)-\(index)"
                            do throws(StorageError) {
                                try await storage.set(Data(key.utf8), forKey: key)
                                acknowledged.append(key)
                            } catch {
                                errors.append(error)
                                break
                            }
                        }
                        return errors
                    }
                }
                // Shut down while every writer has writes in flight (or after 30 s, if writes
                // fail: the expectations below then say so instead of the test hanging).
                let deadline = ContinuousClock.now + .seconds(30)
                while acknowledged.all.count < 200, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                trigger.triggerGracefulShutdown()
                return try await group.reduce(into: [StorageError]()) { $0 += $1 }
            }
        }

        #expect(storage.isClosed)
        // Every writer stopped on a refusal: the storage closed under it, and said so.
        #expect(refusals.count == 8)
        #expect(refusals.allSatisfy { $0.code == .closed }, "\(refusals)")
        let reopened = try await PostgresStorage(url: try Self.url(), options: Self.options(table: table))
        let stored = Set(try await reopened.keys())
        let lost = acknowledged.all.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "acknowledged writes missing after the shutdown: \(lost.prefix(10))")
        #expect(acknowledged.all.count >= 200)
        try await reopened.removeAll()
        await reopened.close()
    }

    @Test func aStorageOverTheAppsClientMakesItsTableOnFirstUseAndLeavesTheClientRunning() async throws {
        let configuration = try PostgresStorage.configuration(from: try Self.url())
        let client = PostgresClient(configuration: configuration)
        let table = Self.uniqueTable()
        // Made before the client runs, as an app builds its services before the group runs them.
        let storage = try PostgresStorage(client: client, options: Self.options(table: table))
        #expect(storage.configuration == nil)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }

            try await storage.set(Data("Kyiv".utf8), forKey: "capital")
            #expect(try await storage.value(forKey: "capital") == Data("Kyiv".utf8))
            try await storage.update(forKey: "capital", timeToLive: .seconds(60)) { $0 = Data("Київ".utf8) }
            #expect(try await storage.lifetime(forKey: "capital") != nil)

            await storage.close()
            await #expect(throws: StorageError.self) { try await storage.value(forKey: "capital") }
            // The client is the app's: it still answers.
            let rows = try await client.query("SELECT count(*) FROM \(unescaped: table)", logger: Self.logger)
            var count = -1
            for try await (value) in rows.decode(Int.self) { count = value }
            #expect(count == 1)
            try await client.query("DROP TABLE \(unescaped: table)", logger: Self.logger)
            try await client.query("DROP FUNCTION IF EXISTS \(unescaped: table)_notify", logger: Self.logger)
            group.cancelAll()
        }
    }

    @Test(arguments: ["", "Users", "users; DROP TABLE x", String(repeating: "t", count: 49)])
    func aStorageOverTheAppsClientRefusesAnUnusableTableAtOnce(table: String) throws {
        let client = PostgresClient(
            configuration: try PostgresStorage.configuration(from: "postgres://a@127.0.0.1:1/b")
        )
        let error = #expect(throws: StorageError.self) {
            try PostgresStorage(client: client, options: .init(table: table))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("table name") == true)
    }

    @Test func aStorageOverTheAppsClientStopsOnATimeToLiveThatHasRunOut() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let client = PostgresClient(
                configuration: try PostgresStorage.configuration(from: "postgres://a@127.0.0.1:1/b")
            )
            _ = try PostgresStorage(client: client, options: .init(table: "sessions", timeToLive: .seconds(-1)))
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "PostgresStorage: timeToLive must be positive, got -1.0 seconds"
        )
    }

    @Test func aTableThatIsMissingFailsTheFirstOperationAndTheNextTriesAgain() async throws {
        let configuration = try PostgresStorage.configuration(from: try Self.url())
        let client = PostgresClient(configuration: configuration)
        var options = Self.options(table: Self.uniqueTable())
        options.createsTable = false
        let storage = try PostgresStorage(client: client, options: options)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            for _ in 0..<2 {
                do {
                    _ = try await storage.value(forKey: "a")
                    Issue.record("a read of a missing table returned")
                } catch let error as StorageError {
                    #expect(error.code == .notFound)
                    #expect(error.message.contains(options.table))
                }
            }
            await storage.close()
            group.cancelAll()
        }
    }

    /// Waits up to 10 s for `condition`; whether it came true.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    @Test func aSharedCacheOverTheAppsClientTreatsItsOwnChangesAsAnotherProcesssAndMissesNone() async throws {
        let client = PostgresClient(configuration: try PostgresStorage.configuration(from: try Self.url()))
        let table = Self.uniqueTable()
        let storage = try PostgresStorage(client: client, options: Self.options(table: table))

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            let writer = try await PostgresStorage(url: try Self.url(), options: Self.options(table: table))
            let cache = try await storage.sharedCache()

            // Its own write comes back as a notification (its connections cannot carry its
            // name), so memory drops the key, and the next read fetches the same value again.
            try await cache.set(Data("v1".utf8), forKey: "config")
            #expect(try await Self.eventually { cache.memory.value(forKey: "config") == nil })
            #expect(try await cache.value(forKey: "config") == Data("v1".utf8))
            #expect(cache.memory.value(forKey: "config") == Data("v1".utf8))

            // Another process's write reaches it as before.
            try await writer.set(Data("v2".utf8), forKey: "config")
            #expect(try await Self.eventually { cache.memory.value(forKey: "config") == nil })
            #expect(try await cache.value(forKey: "config") == Data("v2".utf8))

            await cache.close()
            await writer.dropTableForTesting()
            await writer.close()
            await storage.close()
            group.cancelAll()
        }
    }

    @Test func aServiceGroupRunsAndStopsAClientAStorageAndASharedCache() async throws {
        let configuration = try PostgresStorage.configuration(from: try Self.url())
        let client = PostgresClient(configuration: configuration)
        let table = Self.uniqueTable()
        let storage = try PostgresStorage(client: client, options: Self.options(table: table))
        let owned = try await PostgresStorage(url: try Self.url(), options: Self.options(table: table))
        let cache = try await owned.sharedCache()
        let group = ServiceGroup(
            services: [client, storage, owned, cache],
            gracefulShutdownSignals: [],
            logger: Self.logger
        )

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await storage.set(Data("1".utf8), forKey: "counter")
            #expect(try await cache.value(forKey: "counter") == Data("1".utf8))
            try await owned.removeAll()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }

        #expect(storage.isClosed)
        #expect(owned.isClosed)
        #expect(!cache.isUsingMemory)
        // The client stopped last: the group ended, so nothing reaches the table now.
        await #expect(throws: StorageError.self) { try await owned.value(forKey: "counter") }
        let cleanup = try await PostgresStorage(url: try Self.url(), options: Self.options(table: table))
        try await cleanup.removeAll()
        await cleanup.close()
    }

    @Test func maintenanceRemovesExpiredValuesUntilTheGroupShutsDown() async throws {
        let clock = ManualClock()
        let storage = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        for index in 0..<100 { storage.set(index, forKey: "k\(index)") }
        clock.advance(by: .seconds(61))
        #expect(storage.count == 100)

        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await MaintenanceService(storage, every: .milliseconds(10)).run() }
                let deadline = ContinuousClock.now + .seconds(30)
                while storage.count > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(storage.count == 0)
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    @Test func aGracefulShutdownEndsTheWaitForTheNextRound() async throws {
        let storage = MemoryStorage<String, Int>()
        let start = ContinuousClock.now
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await MaintenanceService(storage, every: .seconds(3_600)).run() }
                try await Task.sleep(for: .milliseconds(50))
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        // Not an hour: the wait ended with the shutdown.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func maintenanceWithAnIntervalThatIsNotPositiveStopsAtOnce() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MaintenanceService(MemoryStorage<String, Int>(), every: .zero)
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "MaintenanceService: the interval between rounds must be positive, got 0.0 seconds"
        )
    }
}

/// A list of keys any task may append to.
final class LockedKeys: Sendable {
    private let keys = LockedState<[String]>([])
    func append(_ key: String) { keys.withLock { $0.append(key) } }
    var all: [String] { keys.withLock { $0 } }
}
#endif
