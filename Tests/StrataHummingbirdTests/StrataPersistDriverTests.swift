#if Hummingbird && Postgres
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Strata
import StrataHummingbird
import StrataPostgres
import StrataSQLite
import StrataTestSupport
import Testing

/// StrataPersistDriver keeps `PersistDriver`'s rules on every storage, through real requests to
/// routes that use it, as an app would.
@Suite struct StrataPersistDriverTests {
    /// The storages the driver is checked on.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, disk, sqlite, postgres, sharedCache
        var testDescription: String { rawValue }
    }

    /// A storage of `kind` and a way to throw it away.
    final class Made: Sendable {
        let storage: any LifetimeStorage<String, Data>
        let dispose: @Sendable () async -> Void
        init(_ storage: any LifetimeStorage<String, Data>, dispose: @escaping @Sendable () async -> Void) {
            self.storage = storage
            self.dispose = dispose
        }

        /// A driver over the storage (opening the existential).
        var persist: any PersistDriver { Self.driver(storage) }

        private static func driver(_ storage: some LifetimeStorage<String, Data>) -> any PersistDriver {
            StrataPersistDriver(storage)
        }
    }

    /// A storage of `kind` whose values live `timeToLive` unless a write gives them a lifetime
    /// (never, for `nil`).
    static func make(_ kind: Kind, timeToLive: Duration? = nil) async throws -> Made {
        switch kind {
        case .memory:
            return Made(MemoryStorage<String, Data>(timeToLive: timeToLive), dispose: {})
        case .disk:
            let folder = try TemporaryFolder()
            var options = DiskStorage.Options()
            options.timeToLive = timeToLive
            return Made(try DiskStorage(url: folder.url, options: options), dispose: { folder.remove() })
        case .sqlite:
            let folder = try TemporaryFolder()
            var options = SQLiteStorage.Options()
            options.timeToLive = timeToLive
            return Made(
                try SQLiteStorage(path: folder.child("values.sqlite").path, options: options),
                dispose: { folder.remove() }
            )
        case .postgres:
            let storage = try await TestPostgres.storage(timeToLive: timeToLive)
            return Made(storage, dispose: { await TestPostgres.dispose(storage) })
        case .sharedCache:
            let storage = try await TestPostgres.storage(timeToLive: timeToLive)
            let shared = try await storage.sharedCache()
            return Made(
                shared,
                dispose: {
                    await shared.close()
                    await TestPostgres.dispose(storage)
                }
            )
        }
    }

    /// The routes of Hummingbird's own persist tests, plus `create`, over `persist`.
    static func router(_ persist: some PersistDriver) -> Router<BasicRequestContext> {
        let router = Router()
        router.put("/persist/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            try await persist.set(key: try context.parameters.require("tag"), value: String(buffer: body))
            return .ok
        }
        router.put("/persist/:tag/:seconds") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let seconds = try context.parameters.require("seconds", as: Int.self)
            try await persist.set(
                key: try context.parameters.require("tag"),
                value: String(buffer: body),
                expires: .seconds(seconds)
            )
            return .ok
        }
        router.post("/create/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            do {
                try await persist.create(key: try context.parameters.require("tag"), value: String(buffer: body))
            } catch let error as PersistError where error == .duplicate {
                throw HTTPError(.conflict)
            }
            return .created
        }
        router.get("/persist/:tag") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("tag"), as: String.self)
        }
        router.put("/number/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let number = Int(String(buffer: body)) else { throw HTTPError(.badRequest) }
            try await persist.set(key: try context.parameters.require("tag"), value: number)
            return .ok
        }
        router.get("/double/:tag") { _, context -> String? in
            do {
                return try await persist.get(key: try context.parameters.require("tag"), as: Double.self)
                    .map { String($0) }
            } catch let error as PersistError where error == .invalidConversion {
                throw HTTPError(.unprocessableContent)
            }
        }
        router.get("/number/:tag") { _, context -> String? in
            do {
                return try await persist.get(key: try context.parameters.require("tag"), as: Int.self).map(String.init)
            } catch let error as PersistError where error == .invalidConversion {
                throw HTTPError(.unprocessableContent)
            }
        }
        router.get("/persist/:tag/ttl") { _, context -> String in
            let found = try await persist.getWithTTL(key: try context.parameters.require("tag"), as: String.self)
            guard let found else { throw HTTPError(.notFound) }
            return found.ttl.map { String($0.components.seconds) } ?? "never"
        }
        router.delete("/persist/:tag") { _, context -> HTTPResponse.Status in
            try await persist.remove(key: try context.parameters.require("tag"))
            return .noContent
        }
        return router
    }

    /// Runs `body` against an app whose routes use a driver over a fresh storage of `kind`, whose
    /// values live `timeToLive` unless a write gives them a lifetime.
    static func withApp(
        _ kind: Kind,
        timeToLive: Duration? = nil,
        _ body: @escaping @Sendable (any TestClientProtocol, Made) async throws -> Void
    ) async throws {
        let made = try await make(kind, timeToLive: timeToLive)
        do {
            let app = Application(router: router(made.persist))
            try await app.test(.router) { client in try await body(client, made) }
        } catch {
            await made.dispose()
            throw error
        }
        await made.dispose()
    }

    static func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test(arguments: Kind.allCases)
    func setThenGetThroughRequests(kind: Kind) async throws {
        try await Self.withApp(kind) { client, _ in
            try await client.execute(uri: "/persist/greeting", method: .put, body: Self.body("hello")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/persist/greeting", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "hello")
            }
            try await client.execute(uri: "/persist/greeting", method: .delete) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/greeting", method: .get) { #expect($0.status == .noContent) }
        }
    }

    @Test(arguments: Kind.allCases)
    func createOnAnExistingKeyIsADuplicateAndKeepsTheFirstValue(kind: Kind) async throws {
        try await Self.withApp(kind) { client, _ in
            try await client.execute(uri: "/create/note", method: .post, body: Self.body("first")) {
                #expect($0.status == .created)
            }
            try await client.execute(uri: "/create/note", method: .post, body: Self.body("second")) {
                #expect($0.status == .conflict)
            }
            try await client.execute(uri: "/persist/note", method: .get) { response in
                #expect(String(buffer: response.body) == "first")
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func concurrentCreatesOfOneKeySucceedExactlyOnce(kind: Kind) async throws {
        let made = try await Self.make(kind)
        defer { Task { await made.dispose() } }
        let persist = made.persist

        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        try await persist.create(key: "once", value: "writer \(index)", expires: nil)
                        return true
                    } catch let error as PersistError where error == .duplicate {
                        return false
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }

        #expect(outcomes.filter { $0 }.count == 1)
        #expect(try await persist.get(key: "once", as: String.self)?.hasPrefix("writer ") == true)
    }

    @Test func twoServersRacingToCreateOneKeyOnOneTableSucceedOnce() async throws {
        let first = try await TestPostgres.storage()
        let second = try await TestPostgres.storage(table: first.options.table)
        let drivers = [StrataPersistDriver(first), StrataPersistDriver(second)]

        for round in 0..<20 {
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, persist) in drivers.enumerated() {
                    group.addTask {
                        do {
                            try await persist.create(key: "round-\(round)", value: index, expires: .seconds(60))
                            return true
                        } catch let error as PersistError where error == .duplicate {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1, "round \(round): \(outcomes)")
        }

        await second.close()
        await TestPostgres.dispose(first)
    }

    @Test(arguments: Kind.allCases)
    func setWithoutAnExpiryKeepsTheExistingOne(kind: Kind) async throws {
        try await Self.withApp(kind) { client, _ in
            try await client.execute(uri: "/persist/token/600", method: .put, body: Self.body("a")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/persist/token", method: .put, body: Self.body("b")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/persist/token/ttl", method: .get) { response in
                let seconds = Int(String(buffer: response.body)) ?? -1
                #expect((540...600).contains(seconds), "the lifetime after a set without an expiry: \(seconds) s")
            }
            try await client.execute(uri: "/persist/token", method: .get) { response in
                #expect(String(buffer: response.body) == "b")
            }
            try await client.execute(uri: "/persist/forever", method: .put, body: Self.body("c")) { _ in }
            try await client.execute(uri: "/persist/forever/ttl", method: .get) { response in
                #expect(String(buffer: response.body) == "never")
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func aValueOfAnotherTypeIsAnInvalidConversionAndStaysStored(kind: Kind) async throws {
        try await Self.withApp(kind) { client, _ in
            try await client.execute(uri: "/persist/word", method: .put, body: Self.body("not a number")) { _ in }
            try await client.execute(uri: "/number/word", method: .get) { #expect($0.status == .unprocessableContent) }
            try await client.execute(uri: "/persist/word", method: .get) { response in
                #expect(String(buffer: response.body) == "not a number")
            }
        }
    }

    /// Hummingbird's memory driver keeps a value given no expiry forever; so must the driver on
    /// a storage whose values otherwise live a minute.
    @Test(arguments: Kind.allCases)
    func noExpiryMeansNeverEvenOnAStorageWithADefaultLifetime(kind: Kind) async throws {
        try await Self.withApp(kind, timeToLive: .seconds(60)) { client, made in
            try await client.execute(uri: "/create/created", method: .post, body: Self.body("a")) {
                #expect($0.status == .created)
            }
            try await client.execute(uri: "/persist/set", method: .put, body: Self.body("b")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/persist/kept/600", method: .put, body: Self.body("c")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/persist/kept", method: .put, body: Self.body("d")) {
                #expect($0.status == .ok)
            }
            for key in ["created", "set"] {
                try await client.execute(uri: "/persist/\(key)/ttl", method: .get) { response in
                    #expect(String(buffer: response.body) == "never", "\(key) given no expiry")
                }
                #expect(try await made.storage.lifetime(forKey: key) == .unlimited, "\(key) in the storage")
            }
            try await client.execute(uri: "/persist/kept/ttl", method: .get) { response in
                let seconds = Int(String(buffer: response.body)) ?? -1
                #expect((540...600).contains(seconds), "a set without an expiry kept \(seconds) s")
            }
            try await client.execute(uri: "/persist/kept", method: .get) { response in
                #expect(String(buffer: response.body) == "d")
            }
        }
    }

    /// Hummingbird's memory driver casts: a value is read only as the type it was stored as.
    @Test(arguments: Kind.allCases)
    func aNumberReadAsAnotherNumberTypeIsAnInvalidConversion(kind: Kind) async throws {
        try await Self.withApp(kind) { client, _ in
            try await client.execute(uri: "/number/five", method: .put, body: Self.body("5")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/double/five", method: .get) { response in
                #expect(response.status == .unprocessableContent, "an Int read as a Double: \(response.status)")
            }
            try await client.execute(uri: "/number/five", method: .get) { response in
                #expect(String(buffer: response.body) == "5")
            }
        }
    }

    struct Point: Codable, Equatable {
        var x: Int
        var y: Int
    }

    struct Size: Codable, Equatable {
        var x: Int
        var y: Int
    }

    @Test(arguments: Kind.allCases)
    func aStructReadAsAnotherOfTheSameShapeIsAnInvalidConversion(kind: Kind) async throws {
        let made = try await Self.make(kind)
        let persist = made.persist
        do {
            try await persist.set(key: "corner", value: Point(x: 1, y: 2))
            await #expect(throws: PersistError.invalidConversion) {
                _ = try await persist.get(key: "corner", as: Size.self)
            }
            #expect(try await persist.get(key: "corner", as: Point.self) == Point(x: 1, y: 2))
        } catch {
            await made.dispose()
            throw error
        }
        await made.dispose()
    }

    @Test func dataStoredWithoutATypeIsReadByItsShape() async throws {
        let storage = MemoryStorage<String, Data>()
        let persist = StrataPersistDriver(storage)
        storage.set(Data(#"{"x":1,"y":2}"#.utf8), forKey: "earlier")
        #expect(try await persist.get(key: "earlier", as: Point.self) == Point(x: 1, y: 2))
        await #expect(throws: PersistError.invalidConversion) {
            _ = try await persist.get(key: "earlier", as: String.self)
        }
    }

    /// The driver over a memory layer in front of a disk: a value's lifetime reaches both
    /// layers, and it is gone from both once it has run out.
    @Test func overAMemoryLayerInFrontOfADiskALifetimeEndsInBoth() async throws {
        let clock = ManualClock()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let memory = MemoryStorage<String, Data>(clock: clock)
        var options = DiskStorage.Options()
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        let persist = StrataPersistDriver(memory.combined(with: disk))

        try await persist.create(key: "code", value: 1234, expires: .seconds(60))
        try await persist.set(key: "name", value: "Lviv", expires: nil)
        #expect(try await persist.getWithTTL(key: "code", as: Int.self)?.ttl == .seconds(60))
        #expect(memory.lifetime(forKey: "code") == .remaining(.seconds(60)))
        #expect(disk.lifetime(forKey: "code") == .remaining(.seconds(60)))
        clock.advance(by: .seconds(61))
        #expect(try await persist.get(key: "code", as: Int.self) == nil)
        #expect(memory.value(forKey: "code") == nil)
        #expect(try await disk.value(forKey: "code") == nil)
        #expect(try await persist.getWithTTL(key: "name", as: String.self)?.ttl == nil)
        #expect(memory.lifetime(forKey: "name") == .unlimited)
    }

    @Test func expiredValuesAreGoneAndCreateMayReuseTheirKey() async throws {
        let clock = ManualClock()
        let persist = StrataPersistDriver(MemoryStorage<String, Data>(clock: clock))

        try await persist.create(key: "code", value: 1234, expires: .seconds(60))
        await #expect(throws: PersistError.duplicate) {
            try await persist.create(key: "code", value: 5678, expires: .seconds(60))
        }
        #expect(try await persist.getWithTTL(key: "code", as: Int.self)?.ttl == .seconds(60))
        clock.advance(by: .seconds(61))

        #expect(try await persist.get(key: "code", as: Int.self) == nil)
        try await persist.create(key: "code", value: 5678, expires: .seconds(60))
        #expect(try await persist.get(key: "code", as: Int.self) == 5678)
    }

    @Test func aKeyTheStorageRefusesIsABadRequestNotACrash() async throws {
        try await Self.withApp(.disk) { client, _ in
            let longKey = String(repeating: "k", count: (1 << 20) + 1)
            try await client.execute(uri: "/persist/\(longKey)", method: .put, body: Self.body("x")) { response in
                #expect(response.status == .badRequest)
                #expect(!String(buffer: response.body).contains(longKey))
            }
            try await client.execute(uri: "/persist/\(longKey)", method: .get) { #expect($0.status == .badRequest) }
        }
    }

    @Test func aServerThatGoesAwayMidRequestIsAnErrorWithinTheStoragesLimit() async throws {
        try await PrivateServer.with { server in
            var options = PostgresStorage.Options()
            options.operationTimeout = .seconds(2)
            options.connectTimeout = .seconds(1)
            let storage = try await PostgresStorage(url: server.url, options: options)
            let persist = StrataPersistDriver(storage)
            let router = Self.router(persist)
            // Writes one value after another until one fails: the server stops under it.
            router.post("/bulk") { _, _ -> String in
                for index in 0..<1_000_000 {
                    try Task.checkCancellation()
                    try await persist.set(key: "bulk-\(index)", value: index)
                }
                return "all written"
            }
            let app = Application(router: router)
            try await app.test(.router) { client in
                try await client.execute(uri: "/persist/a", method: .put, body: Self.body("x")) {
                    #expect($0.status == .ok)
                }
                async let bulk = client.execute(uri: "/bulk", method: .post)
                try await Task.sleep(for: .milliseconds(300))
                // Timed from the moment the server is gone: pg_ctl's own stop takes seconds on a
                // loaded machine, and the request may fail while it runs.
                try await server.kill()
                let killed = ContinuousClock.now
                let response = try await bulk
                let elapsed = ContinuousClock.now - killed
                #expect(response.status.code >= 500, "the request in flight: \(response.status)")
                #expect(!String(buffer: response.body).contains("bulk-"), "a key reached the response")
                // Within the storage's limit (2 s per operation), with room for a loaded machine.
                #expect(elapsed < .seconds(10), "the request in flight took \(elapsed) after the server stopped")
                try await client.execute(uri: "/persist/a", method: .get) { #expect($0.status.code >= 500) }
            }
            await storage.close()
        }
    }

    @Test func aClosedStorageIsServiceUnavailable() async throws {
        let storage = try await TestPostgres.storage()
        let app = Application(router: Self.router(StrataPersistDriver(storage)))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("x")) {
                #expect($0.status == .ok)
            }
            await TestPostgres.dispose(storage)
            try await client.execute(uri: "/persist/a", method: .get) { #expect($0.status == .serviceUnavailable) }
        }
    }
}
#else
import Testing

/// Without the Hummingbird trait this target holds no tests; the default traits include it.
@Suite struct StrataPersistDriverTests {
    @Test(
        .disabled(
            "StrataHummingbird is built only with the Hummingbird and Postgres traits (`swift test --enable-all-traits`)"
        )
    )
    func needsTheHummingbirdTrait() {}
}
#endif
