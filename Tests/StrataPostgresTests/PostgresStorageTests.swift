#if Postgres
import Foundation
import Strata
import StrataPostgres
import StrataTestSupport
import StrataTesting
import Synchronization
import Testing

/// PostgresStorage keeps the storage model on a real server: shared values, expiry, batches,
/// atomic updates across instances, and hostile keys that never change a statement.
///
/// Needs `STRATA_POSTGRES_URL` (scripts/test.sh starts a throwaway server); without it every test
/// fails and says so.
@Suite struct PostgresStorageTests {
    @Test func passesTheBehaviourSuite() async throws {
        _ = try PostgresTestServer.url()
        let opened = OpenedStorages()
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let counting = StorageBehaviourSuite<PostgresStorage>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
        )
        let suite = StorageBehaviourSuite(
            keys: ["kharkiv", "kyiv", "lviv", ""],
            values: values,
            counting: counting,
            concurrentUpdates: 50
        ) {
            let storage = try await PostgresTestServer.storage()
            opened.append(storage)
            return storage
        }

        try await suite.run()

        for storage in opened.all { await PostgresTestServer.dispose(storage) }
    }

    @Test func shardedPostgresStoragesPassTheBehaviourSuite() async throws {
        _ = try PostgresTestServer.url()
        let opened = OpenedStorages()
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let counting = StorageBehaviourSuite<ShardedStorage<PostgresStorage>>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
        )
        let suite = StorageBehaviourSuite(
            keys: ["kharkiv", "kyiv", "lviv", ""],
            values: values,
            counting: counting,
            concurrentUpdates: 50
        ) {
            var shards: [PostgresStorage] = []
            for _ in 0..<2 {
                let storage = try await PostgresTestServer.storage()
                opened.append(storage)
                shards.append(storage)
            }
            return sharded(across: shards)
        }

        try await suite.run()

        for storage in opened.all { await PostgresTestServer.dispose(storage) }
    }

    @Test func twoInstancesShareOneTable() async throws {
        let first = try await PostgresTestServer.storage()
        let second = try await PostgresTestServer.storage(table: first.options.table)

        try await first.set(Data("kharkiv".utf8), forKey: "city")

        #expect(try await second.value(forKey: "city") == Data("kharkiv".utf8))
        await second.close()
        await PostgresTestServer.dispose(first)
    }

    @Test func concurrentUpdatesFromTwoInstancesAreNotLost() async throws {
        let first = try await PostgresTestServer.storage()
        let second = try await PostgresTestServer.storage(table: first.options.table)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<60 {
                let storage = index.isMultiple(of: 2) ? first : second
                group.addTask {
                    try await storage.update(forKey: "count") { value in
                        let count = value.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                        value = Data(String(count + 1).utf8)
                    }
                }
            }
            try await group.waitForAll()
        }

        #expect(try await first.value(forKey: "count") == Data("60".utf8))
        await second.close()
        await PostgresTestServer.dispose(first)
    }

    /// A create (an update that stores only into a missing key) racing a plain `set` from
    /// another instance: whichever commits first, the set's value is the one left, since a set
    /// after the create replaces it and a set before it makes the create find a value. Before
    /// the update locked the row and inserted only where none was, a set landing between the
    /// create's read and its write was overwritten while the create reported success.
    @Test func aCreateRacingAPlainSetFromAnotherInstanceNeverOverwritesIt() async throws {
        let first = try await PostgresTestServer.storage()
        let second = try await PostgresTestServer.storage(table: first.options.table)
        struct Exists: Error {}

        var overwritten: [Int] = []
        for round in 0..<150 {
            let key = "race-\(round)"
            async let created: Bool = {
                do {
                    try await first.update(forKey: key) { value in
                        guard value == nil else { throw Exists() }
                        value = Data("create".utf8)
                    }
                    return true
                } catch let error as StorageError where error.underlying is Exists {
                    return false
                }
            }()
            async let plain: Void = second.set(Data("plain".utf8), forKey: key)
            _ = try await (created, plain)
            if try await first.value(forKey: key) != Data("plain".utf8) { overwritten.append(round) }
        }

        #expect(overwritten.isEmpty, "a plain set was overwritten by a create in rounds \(overwritten)")
        await second.close()
        await PostgresTestServer.dispose(first)
    }

    /// A value set with a lifetime that a plain removal from another instance removes while an
    /// update holds the key stays removed or updated, never half of each.
    @Test func anUpdateRacingARemovalFromAnotherInstanceLosesNeither() async throws {
        let first = try await PostgresTestServer.storage()
        let second = try await PostgresTestServer.storage(table: first.options.table)
        for round in 0..<60 {
            let key = "removal-\(round)"
            try await first.set(Data("1".utf8), forKey: key)
            async let updated: Bool = first.update(forKey: key) { value -> Bool in
                guard let current = value else { return false }
                value = current + Data("+".utf8)
                return true
            }
            async let removed: Void = second.removeValue(forKey: key)
            let (sawValue, _) = try await (updated, removed)
            let left = try await first.value(forKey: key)
            // The update before the removal: gone. After it: it saw nothing and wrote nothing.
            #expect(
                left == nil,
                "round \(round): the update saw a value: \(sawValue), left \(String(describing: left))"
            )
        }
        await second.close()
        await PostgresTestServer.dispose(first)
    }

    @Test func defaultAndPerEntryTimeToLiveExpireValues() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { options in
            options.timeToLive = .seconds(60)
            options.clock = clock
        }
        try await storage.set(Data([1]), forKey: "default")
        try await storage.set(Data([2]), forKey: "short", timeToLive: .seconds(5))

        clock.advance(by: .seconds(5))
        let afterFive = (try await storage.value(forKey: "default"), try await storage.value(forKey: "short"))
        clock.advance(by: .seconds(55))

        #expect(afterFive.0 == Data([1]))
        #expect(afterFive.1 == nil)
        #expect(try await storage.value(forKey: "default") == nil)
        #expect(try await storage.keys().isEmpty)
        #expect(try await storage.removeExpired() == 2)
        #expect(try await storage.statistics().count == 0)
        await PostgresTestServer.dispose(storage)
    }

    @Test func anUpdateKeepsTheEntrysOwnLifetime() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { options in
            options.timeToLive = .seconds(60)
            options.clock = clock
        }
        try await storage.set(Data([1]), forKey: "token", timeToLive: .seconds(10))
        try await storage.update(forKey: "token") { $0 = Data([2]) }
        try await storage.update(forKey: "new") { $0 = Data([3]) }
        // An expired entry that an update finds is replaced as a new one, with the default.
        try await storage.set(Data([4]), forKey: "expired", timeToLive: .seconds(1))
        clock.advance(by: .seconds(2))
        try await storage.update(forKey: "expired") { $0 = ($0 == nil) ? Data([5]) : Data([6]) }

        clock.advance(by: .seconds(7))
        #expect(try await storage.value(forKey: "token") == Data([2]))
        clock.advance(by: .seconds(1))
        #expect(try await storage.value(forKey: "token") == nil)
        #expect(try await storage.value(forKey: "expired") == Data([5]))
        clock.advance(by: .seconds(49))
        #expect(try await storage.value(forKey: "new") == Data([3]))
        #expect(try await storage.value(forKey: "expired") == Data([5]))
        clock.advance(by: .seconds(2))
        #expect(try await storage.value(forKey: "new") == nil)
        #expect(try await storage.value(forKey: "expired") == Data([5]))
        clock.advance(by: .seconds(1))
        #expect(try await storage.value(forKey: "expired") == nil)
        await PostgresTestServer.dispose(storage)
    }

    @Test func batchesWriteAndReadManyValuesAtOnce() async throws {
        let storage = try await PostgresTestServer.storage()
        let values = Dictionary(uniqueKeysWithValues: (0..<500).map { ("key\($0)", Data("\($0)".utf8)) })

        try await storage.setValues(values)
        let read = try await storage.values(forKeys: ["key1", "key499", "missing"])

        #expect(read == [Data("1".utf8), Data("499".utf8), nil])
        let statistics = try await storage.statistics()
        #expect(statistics.count == 500)
        #expect(statistics.hits == 2)
        #expect(statistics.misses == 1)
        await PostgresTestServer.dispose(storage)
    }

    /// A long list of keys over a slow link: read in one query, its answer (about 5.5 MB at
    /// 768 KiB a second, over 7 s) takes longer than the 5-second limit and the read fails as
    /// `.timedOut`; read ``PostgresStorage/keysPerRead`` keys a query, each query (about 1.4 MB,
    /// under 2 s) answers within it, and the values come back in the order asked, across the
    /// queries' boundaries. (With 1 MiB a second and 3 s, each query had 1.7 s to spare, and a
    /// bare run of every suite beside a build ran out of it twice.)
    @Test func aLongKeyListIsReadInQueriesThatEachFitTheTimeLimit() async throws {
        let writer = try await PostgresTestServer.storage()
        let count = 4 * PostgresStorage.keysPerRead
        let payload = Data(repeating: 0x5A, count: 2_048)
        try await writer.setValues((0..<count).map { (key: "key\($0)", value: payload + Data("\($0)".utf8)) })
        var components = try #require(URLComponents(string: try PostgresTestServer.url()))
        let relay = try TCPRelay(toPort: UInt16(try #require(components.port)))
        defer { relay.stop() }
        components.port = Int(relay.port)
        var options = PostgresStorage.Options(table: writer.options.table)
        options.operationTimeout = .seconds(5)
        let reader = try await PostgresStorage(url: try #require(components.string), options: options)
        // Every third key is missing, one key is asked twice, across a query's boundary.
        var keys = (0..<count).map { $0 % 3 == 2 ? "missing\($0)" : "key\($0)" }
        keys[PostgresStorage.keysPerRead] = keys[PostgresStorage.keysPerRead - 1]

        relay.limit(toBytesPerSecond: 768 << 10)
        let started = ContinuousClock.now
        let read = try await reader.values(forKeys: keys)
        let took = ContinuousClock.now - started
        relay.limit(toBytesPerSecond: 0)

        print("read \(count) keys of 2 KiB over 768 KiB/s in \(took)")
        #expect(read.count == keys.count)
        #expect(read == keys.map { $0.hasPrefix("key") ? payload + Data($0.dropFirst(3).utf8) : nil })
        #expect(took > .seconds(5), "the answer was slowed to the link's rate")
        await reader.close()
        await PostgresTestServer.dispose(writer)
    }

    @Test func removeAllEmptiesTheTable() async throws {
        let storage = try await PostgresTestServer.storage()
        try await storage.setValues(["a": Data([1]), "b": Data([2])])

        try await storage.removeAll()

        #expect(try await storage.keys().isEmpty)
        await PostgresTestServer.dispose(storage)
    }

    @Test func keysSwiftConsidersEqualShareOneValue() async throws {
        let storage = try await PostgresTestServer.storage()

        try await storage.set(Data([1]), forKey: "caf\u{E9}")

        #expect(try await storage.value(forKey: "cafe\u{301}") == Data([1]))
        await PostgresTestServer.dispose(storage)
    }

    /// A key with a short description, so long keys do not flood the test log.
    struct HostileKey: CustomTestStringConvertible, Sendable {
        let key: String
        var testDescription: String {
            key.count > 40 ? "\(key.prefix(20))… (\(key.utf8.count) bytes)" : key.debugDescription
        }
    }

    static let hostileKeys = [
        "'); DROP TABLE x; --",
        "x'; DELETE FROM strata_values; --",
        "\" OR 1=1 --",
        "$1",
        "a\u{0}b",
        "\\x00",
        String(repeating: "k", count: 10_000),
        "ключ 🔑",
        "",
    ].map(HostileKey.init)

    @Test(arguments: hostileKeys)
    func hostileKeysAreStoredVerbatimAndChangeNoStatement(hostile: HostileKey) async throws {
        let storage = try await PostgresTestServer.storage()
        try await storage.set(Data("safe".utf8), forKey: "other")

        try await storage.set(Data("value".utf8), forKey: hostile.key)
        let read = try await storage.value(forKey: hostile.key)
        let keys = Set(try await storage.keys())
        let batch = try await storage.values(forKeys: [hostile.key])
        try await storage.update(forKey: hostile.key) { value in value = Data("updated".utf8) }
        let updated = try await storage.value(forKey: hostile.key)
        try await storage.removeValue(forKey: hostile.key)

        #expect(read == Data("value".utf8))
        #expect(keys == [hostile.key, "other"])
        #expect(batch == [Data("value".utf8)])
        #expect(updated == Data("updated".utf8))
        #expect(try await storage.keys() == ["other"])
        #expect(try await storage.value(forKey: "other") == Data("safe".utf8))
        await PostgresTestServer.dispose(storage)
    }

    @Test func aValueThatDoesNotDecodeIsADecodingError() async throws {
        struct City: Codable, Sendable { var name: String }
        let storage = try await PostgresTestServer.storage()
        try await storage.set(Data("not json".utf8), forKey: "kyiv")

        let error = await #expect(throws: StorageError.self) {
            try await storage.json(City.self).value(forKey: "kyiv")
        }

        #expect(error?.code == .decodingFailed)
        await PostgresTestServer.dispose(storage)
    }

    @Test func aClosedStorageThrowsClosed() async throws {
        let storage = try await PostgresTestServer.storage()
        await PostgresTestServer.dispose(storage)

        let error = await #expect(throws: StorageError.self) {
            try await storage.set(Data([1]), forKey: "a")
        }

        #expect(error?.code == .closed)
    }

    @Test(arguments: ["http://host/db", "postgres:///db", "postgres://h/db?sslmode=sometimes"])
    func unusableURLsAreRejected(url: String) async {
        let error = await #expect(throws: StorageError.self) {
            try await PostgresStorage(url: url)
        }

        #expect(error?.code == .invalidConfiguration)
    }

    @Test(arguments: [
        "", "Values", "x; DROP TABLE y", "1abc", String(repeating: "a", count: 49), "user", "order", "table", "select",
    ])
    func unusableTableNamesAreRejected(table: String) async {
        let error = await #expect(throws: StorageError.self) {
            try await PostgresStorage(url: "postgres://postgres@127.0.0.1:1/strata", options: .init(table: table))
        }

        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("'\(table)'") == true)
    }

    @Test(arguments: ["users", "orders", "user_sessions", "_order"])
    func wordsThatOnlyContainAReservedWordAreTableNames(table: String) {
        #expect(PostgresStorage.isValidTableName(table))
    }

    @Test(arguments: [
        "postgres://u:secret@db/x?sslmode=requir", "http://u:secret@db/x", "postgres://u:secret@/x",
        "postgresql://u:p%40ss:secret@db:5432/x?sslmode=nope",
    ])
    func aConfigurationErrorNeverShowsThePassword(url: String) async {
        let error = await #expect(throws: StorageError.self) {
            try await PostgresStorage(url: url)
        }

        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description.contains("secret") == false)
        #expect(error?.description.contains("***") == true)
    }

    @Test func aRedactedURLKeepsEverythingButThePassword() {
        #expect(
            PostgresStorage.redacted("postgres://app:hunter2@db.internal:5432/shop?sslmode=require")
                == "postgres://app:***@db.internal:5432/shop?sslmode=require"
        )
        #expect(PostgresStorage.redacted("postgres://app@db/shop") == "postgres://app@db/shop")
        #expect(PostgresStorage.redacted("not a url") == "not a url")
    }

    @Test func aServerErrorKeepsTheServersMessage() async throws {
        let storage = try await PostgresTestServer.storage()
        await PostgresTestServer.dropTableKeepingStorageOpen(storage)

        let error = await #expect(throws: StorageError.self) {
            try await storage.set(Data([1]), forKey: "a")
        }

        #expect(error?.code == .io)
        #expect(error?.message.contains("does not exist") == true)
        await storage.close()
    }
}

/// Storages a behaviour suite opened, to drop their tables afterwards.
final class OpenedStorages: Sendable {
    private let storages = Mutex<[PostgresStorage]>([])

    func append(_ storage: PostgresStorage) {
        storages.withLock { $0.append(storage) }
    }

    var all: [PostgresStorage] {
        storages.withLock { $0 }
    }
}
#endif
