#if Vapor && Postgres
import Foundation
import NIOCore
import Strata
import StrataPostgres
import StrataSQLite
import StrataTestSupport
import StrataVapor
import Testing
import Vapor
import VaporTesting

/// StrataCache is Vapor's `Cache`: installed with `app.caches.use(.strata(...))`, used through
/// `request.cache` in real requests, bounded and expiring as the storage under it is.
@Suite struct StrataCacheTests {
    /// Routes that use `request.cache`, as an app would.
    static func routes(_ app: Application) {
        app.put("cache", ":key") { request async throws -> HTTPStatus in
            let key = try request.parameters.require("key")
            let value = request.body.string ?? ""
            let seconds = request.query[Int.self, at: "seconds"]
            try await request.cache.set(key, to: value, expiresIn: seconds.map { .seconds($0) })
            return .ok
        }
        app.get("cache", ":key") { request async throws -> String in
            let key = try request.parameters.require("key")
            guard let value = try await request.cache.get(key, as: String.self) else { throw Abort(.notFound) }
            return value
        }
        app.get("number", ":key") { request async throws -> String in
            let key = try request.parameters.require("key")
            return try await request.cache.get(key, as: Int.self).map(String.init) ?? "none"
        }
        app.delete("cache", ":key") { request async throws -> HTTPStatus in
            try await request.cache.delete(try request.parameters.require("key"))
            return .noContent
        }
    }

    static func withCache(
        _ storage: some LifetimeStorage<String, Data>,
        _ body: @escaping @Sendable (Application) async throws -> Void
    ) async throws {
        try await withApp { app in
            // Vapor logs each failed request with its URL; a test's 1 MiB key is not worth printing.
            app.logger.logLevel = .critical
            app.caches.use(.strata(storage))
            routes(app)
            try await body(app)
        }
    }

    @Test func setGetAndDeleteThroughRequests() async throws {
        let storage = MemoryStorage<String, Data>()
        try await Self.withCache(storage) { app in
            try await app.testing().test(.PUT, "cache/greeting", body: ByteBuffer(string: "hello")) {
                #expect($0.status == .ok)
            }
            try await app.testing().test(.GET, "cache/greeting") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == "hello")
            }
            try await app.testing().test(.DELETE, "cache/greeting") { #expect($0.status == .noContent) }
            try await app.testing().test(.GET, "cache/greeting") { #expect($0.status == .notFound) }
        }
        #expect(storage.count == 0)
    }

    @Test func anExpiryBecomesTheValuesLifetime() async throws {
        let clock = ManualClock()
        let storage = MemoryStorage<String, Data>(clock: clock)
        try await Self.withCache(storage) { app in
            try await app.testing().test(.PUT, "cache/code?seconds=60", body: ByteBuffer(string: "1234")) {
                #expect($0.status == .ok)
            }
            #expect(storage.lifetime(forKey: "code") == .remaining(.seconds(60)))
            clock.advance(by: .seconds(61))
            try await app.testing().test(.GET, "cache/code") { #expect($0.status == .notFound) }
        }
    }

    /// The cache over a memory layer in front of a disk, through requests: a value's lifetime
    /// reaches both layers, and it is gone from both once it has run out.
    @Test func overAMemoryLayerInFrontOfADiskALifetimeEndsInBoth() async throws {
        let clock = ManualClock()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let memory = MemoryStorage<String, Data>(clock: clock)
        var options = DiskStorage.Options()
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        try await Self.withCache(memory.combined(with: disk)) { app in
            try await app.testing().test(.PUT, "cache/code?seconds=60", body: ByteBuffer(string: "1234")) {
                #expect($0.status == .ok)
            }
            #expect(memory.lifetime(forKey: "code") == .remaining(.seconds(60)))
            #expect(disk.lifetime(forKey: "code") == .remaining(.seconds(60)))
            clock.advance(by: .seconds(61))
            try await app.testing().test(.GET, "cache/code") { #expect($0.status == .notFound) }
            #expect(memory.value(forKey: "code") == nil)
            #expect(try await disk.value(forKey: "code") == nil)
        }
    }

    @Test func theAsyncAPIAndForRequestUseTheSameStorage() async throws {
        let storage = try DiskStorageForTest()
        defer { storage.folder.remove() }
        try await Self.withCache(storage.storage) { app in
            try await app.cache.set("city", to: "Lviv")
            #expect(try await app.cache.get("city", as: String.self) == "Lviv")
            try await app.testing().test(.GET, "cache/city") { #expect($0.body.string == "Lviv") }
            try await app.cache.set("city", to: String?.none)
            #expect(try await app.cache.get("city", as: String.self) == nil)
        }
    }

    @Test func aLimitedStorageKeepsTheCacheInsideItsLimit() async throws {
        let storage = MemoryStorage<String, Data>(maximumCount: 100)
        try await Self.withCache(storage) { app in
            for index in 0..<1_000 {
                try await app.cache.set("key-\(index)", to: index)
            }
        }
        #expect(storage.count <= 100)
    }

    /// Vapor's memory cache answers `nil` for a value of another type; so does this one.
    @Test func aValueOfAnotherTypeIsNilAndStaysStored() async throws {
        let storage = MemoryStorage<String, Data>()
        try await Self.withCache(storage) { app in
            try await app.cache.set("word", to: "not a number")
            #expect(try await app.cache.get("word", as: Int.self) == nil)
            try await app.testing().test(.GET, "number/word") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == "none")
            }
            #expect(try await app.cache.get("word", as: String.self) == "not a number")
        }
    }

    /// Data that says it is an `Int` and is not (damaged, or its type changed shape) is a
    /// decoding error, never a crash, and stays stored.
    @Test func aDamagedValueOfTheTypeAskedForIsADecodingErrorAndStaysStored() async throws {
        let storage = MemoryStorage<String, Data>()
        let damaged = Data([0x1E] + Array("Swift.Int".utf8) + [0x1E] + Array("[not json".utf8))
        storage.set(damaged, forKey: "count")
        try await Self.withCache(storage) { app in
            await #expect {
                _ = try await app.cache.get("count", as: Int.self)
            } throws: { error in
                (error as? StorageError)?.code == .decodingFailed
            }
            try await app.testing().test(.GET, "number/count") { response in
                #expect(response.status == .internalServerError)
                #expect(!response.body.string.contains("not json"))
            }
        }
        #expect(storage.value(forKey: "count") == damaged)
    }

    /// The storages the cache is checked on.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, disk, sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Runs `body` with a cache over a fresh storage of `kind` whose values live `timeToLive`
    /// unless a write gives them a lifetime, and the storage.
    static func withCache(
        _ kind: Kind,
        timeToLive: Duration?,
        _ body: @escaping @Sendable (Application, any LifetimeStorage<String, Data>) async throws -> Void
    ) async throws {
        switch kind {
        case .memory:
            let storage = MemoryStorage<String, Data>(timeToLive: timeToLive)
            try await withCache(storage) { try await body($0, storage) }
        case .disk:
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            var options = DiskStorage.Options()
            options.timeToLive = timeToLive
            let storage = try DiskStorage(url: folder.url, options: options)
            try await withCache(storage) { try await body($0, storage) }
        case .sqlite:
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            var options = SQLiteStorage.Options()
            options.timeToLive = timeToLive
            let storage = try SQLiteStorage(path: folder.child("values.sqlite").path, options: options)
            try await withCache(storage) { try await body($0, storage) }
        case .postgres:
            var options = PostgresStorage.Options(table: PostgresTestEnvironment.uniqueTable())
            options.timeToLive = timeToLive
            options.operationTimeout = .seconds(20)
            let storage = try await PostgresStorage(url: try PostgresTestEnvironment.url(), options: options)
            do {
                try await withCache(storage) { try await body($0, storage) }
            } catch {
                await storage.dropTableForTesting()
                await storage.close()
                throw error
            }
            await storage.dropTableForTesting()
            await storage.close()
        }
    }

    /// Vapor's memory cache keeps a value set without an expiry forever; so must this one on a
    /// storage whose values otherwise live a minute.
    @Test(arguments: Kind.allCases)
    func noExpiryMeansNeverEvenOnAStorageWithADefaultLifetime(kind: Kind) async throws {
        try await Self.withCache(kind, timeToLive: .seconds(60)) { app, storage in
            try await app.testing().test(.PUT, "cache/forever", body: ByteBuffer(string: "a")) {
                #expect($0.status == .ok)
            }
            #expect(try await storage.lifetime(forKey: "forever") == .unlimited)
            // Also over a value that had a lifetime: Vapor's cache replaces it.
            try await app.testing().test(.PUT, "cache/code?seconds=600", body: ByteBuffer(string: "b")) {
                #expect($0.status == .ok)
            }
            try await app.testing().test(.PUT, "cache/code", body: ByteBuffer(string: "c")) {
                #expect($0.status == .ok)
            }
            #expect(try await storage.lifetime(forKey: "code") == .unlimited)
            try await app.testing().test(.PUT, "cache/short?seconds=30", body: ByteBuffer(string: "d")) {
                #expect($0.status == .ok)
            }
            guard case .remaining(let left)? = try await storage.lifetime(forKey: "short") else {
                Issue.record("a value set for 30 s has no lifetime")
                return
            }
            #expect(left > .seconds(20) && left <= .seconds(30))
        }
    }

    @Test(arguments: Kind.allCases)
    func aNumberReadAsAnotherNumberTypeIsNil(kind: Kind) async throws {
        try await Self.withCache(kind, timeToLive: nil) { app, _ in
            try await app.cache.set("five", to: 5)
            #expect(try await app.cache.get("five", as: Double.self) == nil)
            #expect(try await app.cache.get("five", as: Int.self) == 5)
            try await app.testing().test(.GET, "number/five") { #expect($0.body.string == "5") }
        }
    }

    @Test func aClosedStorageIsServiceUnavailable() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try SQLiteStorage(path: folder.child("cache.sqlite").path)
        try await Self.withCache(storage) { app in
            try await app.testing().test(.PUT, "cache/a", body: ByteBuffer(string: "x")) { #expect($0.status == .ok) }
            try storage.close()
            try await app.testing().test(.GET, "cache/a") { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.body.string.contains("storage error: closed"))
            }
        }
    }

    @Test func aServerThatGoesAwayMidRequestIsAnErrorWithinTheStoragesLimit() async throws {
        try await PrivateServer.with { server in
            var options = PostgresStorage.Options()
            options.operationTimeout = .seconds(2)
            options.connectTimeout = .seconds(1)
            let storage = try await PostgresStorage(url: server.url, options: options)
            try await Self.withCache(storage) { app in
                // Writes one value after another until one fails: the server stops under it.
                app.post("bulk") { request async throws -> String in
                    for index in 0..<1_000_000 {
                        try Task.checkCancellation()
                        try await request.cache.set("bulk-\(index)", to: index)
                    }
                    return "all written"
                }
                try await app.testing().test(.PUT, "cache/a", body: ByteBuffer(string: "x")) {
                    #expect($0.status == .ok)
                }
                let tester = try app.testing()
                let request = TestingHTTPRequest(
                    method: .POST,
                    url: .init(path: "bulk"),
                    headers: [:],
                    body: ByteBufferAllocator().buffer(capacity: 0)
                )
                async let bulk = tester.performTest(request: request)
                try await Task.sleep(for: .milliseconds(300))
                // Timed from the moment the server is gone: pg_ctl's own stop takes seconds on a
                // loaded machine, and the request may fail while it runs.
                try await server.kill()
                let killed = ContinuousClock.now
                let response = try await bulk
                let elapsed = ContinuousClock.now - killed
                #expect(response.status.code >= 500, "the request in flight: \(response.status)")
                #expect(!response.body.string.contains("bulk-"), "a key reached the response")
                // Within the storage's limit (2 s per operation), with room for a loaded machine.
                #expect(elapsed < .seconds(10), "the request in flight took \(elapsed) after the server stopped")
                try await app.testing().test(.GET, "cache/a") { #expect($0.status.code >= 500) }
            }
            await storage.close()
        }
    }

    @Test func aKeyTheStorageRefusesIsABadRequestNotACrash() async throws {
        let storage = try DiskStorageForTest()
        defer { storage.folder.remove() }
        try await Self.withCache(storage.storage) { app in
            let longKey = String(repeating: "k", count: (1 << 20) + 1)
            try await app.testing().test(.PUT, "cache/\(longKey)", body: ByteBuffer(string: "x")) { response in
                #expect(response.status == .badRequest)
                #expect(!response.body.string.contains(longKey))
            }
            try await app.testing().test(.GET, "cache/\(longKey)") { #expect($0.status == .badRequest) }
        }
    }
}

/// A disk storage in a fresh folder.
struct DiskStorageForTest {
    let folder: TemporaryFolder
    let storage: DiskStorage

    init() throws {
        folder = try TemporaryFolder()
        storage = try DiskStorage(url: folder.url)
    }
}
#else
import Testing

/// Without the Vapor trait this target holds no tests; the default traits include it.
@Suite struct StrataCacheTests {
    @Test(.disabled("StrataVapor is built only with the Vapor and Postgres traits (`swift test --enable-all-traits`)"))
    func needsTheVaporTrait() {}
}
#endif
