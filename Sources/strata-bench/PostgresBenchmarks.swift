#if Postgres
import Foundation
import Logging
import PostgresNIO
import Strata
import StrataPostgres
import Synchronization

// The PostgreSQL figures: PostgresStorage against the same statements sent through postgres-nio.
// Built with the Postgres trait (`swift run -c release --traits Server strata-bench`).
extension Benchmark {
    /// The PostgreSQL figures, when `STRATA_POSTGRES_URL` names a server.
    static var postgres: [Benchmark] {
        [postgresSet, postgresGet, sharedCacheInvalidation]
    }

    /// Changes a process makes, each waited for in another process's cache, per round.
    static let invalidationChanges = 200

    /// How long after a write the other process's `SharedCache` drops the key: each change is a
    /// `set` through one `PostgresStorage`, then the wait until a `SharedCache` over another
    /// storage of the same table reports the key invalidated (its `onInvalidation`). The
    /// baseline is the same round trip in postgres-nio alone: the same upsert on a table with
    /// the same trigger, and the wait for its notification on a connection that listens.
    static var sharedCacheInvalidation: Benchmark {
        writes(
            named: "postgres.sharedcache.invalidation",
            baseline: "postgres-nio LISTEN",
            count: invalidationChanges,
            seed: 0x1A,
            pair: InvalidationPair.make,
            subject: { try await $0.storageChange($1) },
            raw: { try await $0.rawChange($1) }
        )
    }

    static var postgresSet: Benchmark {
        writes(
            named: "postgres.set",
            baseline: "postgres-nio",
            count: databaseOperations,
            seed: 0xDB,
            pair: PostgresPair.make,
            subject: { try await $0.storageSet($1) },
            raw: { try await $0.rawSet($1) }
        )
    }

    /// `count` writes of keys in a random order (from `seed`), made by `subject` and by `raw` on
    /// the pair of storages `pair` opens.
    private static func writes<Pair: Sendable>(
        named name: String,
        baseline: String,
        count: Int,
        seed: UInt64,
        pair make: @escaping @Sendable () async throws -> Pair,
        subject: @escaping @Sendable (Pair, [Int]) async throws -> Void,
        raw: @escaping @Sendable (Pair, [Int]) async throws -> Void
    ) -> Benchmark {
        Benchmark(name: name, baseline: baseline) {
            let pair = try await make()
            let order = DataSet(count: databaseKeyCount, valueByteCount: 0).randomIndices(count, seed: seed)
            return Workloads(
                operations: order.count,
                subject: { try await subject(pair, order) },
                baseline: { try await raw(pair, order) }
            )
        }
    }

    static var postgresGet: Benchmark {
        Benchmark(name: "postgres.get", baseline: "postgres-nio") {
            let pair = try await PostgresPair.make()
            try await pair.fill()
            let probes = DataSet(count: databaseKeyCount, valueByteCount: 0).randomIndices(databaseOperations)
            return Workloads(
                operations: probes.count,
                subject: { try await pair.storageGet(probes) },
                baseline: { try await pair.rawGet(probes) }
            )
        }
    }
}

/// A PostgresStorage and a raw PostgresClient on two tables of the same schema.
private final class PostgresPair: Sendable {
    let storage: PostgresStorage
    let rawTable: String
    let client: PostgresClient
    let runner: Task<Void, Never>
    let keys = (0..<Benchmark.databaseKeyCount).map(databaseKey)
    let values = (0..<Benchmark.databaseKeyCount).map(databaseValue)
    static let logger = Logger(label: "strata-bench", factory: { _ in SwiftLogNoOpLogHandler() })

    private init(storage: PostgresStorage, rawTable: String, client: PostgresClient, runner: Task<Void, Never>) {
        self.storage = storage
        self.rawTable = rawTable
        self.client = client
        self.runner = runner
    }

    deinit {
        runner.cancel()
    }

    static func make() async throws -> PostgresPair {
        let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] ?? ""
        let suffix = UInt32.random(in: 0...UInt32.max)
        let storage = try await PostgresStorage(url: url, options: .init(table: "strata_bench_\(suffix)"))
        let raw = try await PostgresStorage(url: url, options: .init(table: "strata_bench_raw_\(suffix)"))
        await raw.close()
        let client = PostgresClient(configuration: try PostgresStorage.configuration(from: url))
        // Runs the baseline's pool for as long as the pair lives; deinit cancels it.
        let runner = Task { await client.run() }
        return PostgresPair(storage: storage, rawTable: raw.options.table, client: client, runner: runner)
    }

    func fill() async throws {
        try await storage.setValues(Dictionary(uniqueKeysWithValues: zip(keys, values)))
        try await rawSet(0..<keys.count)
    }

    func storageSet(_ order: some Sequence<Int>) async throws {
        for index in order {
            try await storage.set(values[index], forKey: keys[index])
        }
    }

    func rawSet(_ order: some Sequence<Int>) async throws {
        for index in order {
            let key = Data(keys[index].utf8)
            let value = values[index]
            let expiry: Double? = nil
            try await client.query(
                """
                INSERT INTO \(unescaped: rawTable) (digest, key, value, expiry)
                VALUES (sha256(\(key)), \(key), \(value), \(expiry))
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
    }

    func storageGet(_ probes: [Int]) async throws {
        var total = 0
        for index in probes {
            total &+= try await storage.value(forKey: keys[index])?.count ?? 0
        }
        blackHole(total)
    }

    func rawGet(_ probes: [Int]) async throws {
        var total = 0
        for index in probes {
            let key = Data(keys[index].utf8)
            let now = Date().timeIntervalSince1970
            let rows = try await client.query(
                """
                SELECT value FROM \(unescaped: rawTable)
                WHERE digest = sha256(\(key)) AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            // As the storage does: the first row answers (the digest is the primary key).
            for try await value in rows.decode(Data.self) {
                total &+= value.count
                break
            }
        }
        blackHole(total)
    }
}
/// A writer and a reader's `SharedCache` on one table, and a raw client with a connection that
/// listens on another table of the same schema (and so the same trigger).
private final class InvalidationPair: Sendable {
    let writer: PostgresStorage
    let cache: SharedCache
    let invalidations: Arrivals<SharedCache.Invalidation>
    let raw: PostgresPair
    let notifications: Arrivals<String>
    let listener: Task<Void, Never>

    private init(
        writer: PostgresStorage,
        cache: SharedCache,
        invalidations: Arrivals<SharedCache.Invalidation>,
        raw: PostgresPair,
        notifications: Arrivals<String>,
        listener: Task<Void, Never>
    ) {
        self.writer = writer
        self.cache = cache
        self.invalidations = invalidations
        self.raw = raw
        self.notifications = notifications
        self.listener = listener
    }

    deinit {
        listener.cancel()
    }

    static func make() async throws -> InvalidationPair {
        let raw = try await PostgresPair.make()
        let invalidations = Arrivals<SharedCache.Invalidation>()
        let cache = try await raw.storage.sharedCache(onInvalidation: { invalidations.arrived($0) })
        let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] ?? ""
        let writer = try await PostgresStorage(url: url, options: .init(table: raw.storage.options.table))
        let notifications = Arrivals<String>()
        let channel = raw.rawTable + "_changes"
        let client = raw.client
        let listener = Task<Void, Never> {
            _ = try? await client.withConnection { connection in
                try await connection.listen(on: channel) { sequence in
                    for try await notification in sequence { notifications.arrived(notification.payload) }
                }
            }
        }
        // The LISTEN is in effect once a notification sent after it comes back.
        let token = "ready \(UUID().uuidString)"
        while true {
            try await client.query("SELECT pg_notify(\(channel), \(token))", logger: PostgresPair.logger)
            if await notifications.next(within: .milliseconds(100), where: { $0 == token }) { break }
        }
        return InvalidationPair(
            writer: writer,
            cache: cache,
            invalidations: invalidations,
            raw: raw,
            notifications: notifications,
            listener: listener
        )
    }

    func storageChange(_ order: [Int]) async throws {
        for index in order {
            let key = raw.keys[index]
            try await writer.set(raw.values[index], forKey: key)
            guard await invalidations.next(within: .seconds(5), where: { $0 == .key(key) }) else {
                throw BenchmarkFailure("the cache heard no invalidation of \(key) within 5 s")
            }
        }
    }

    func rawChange(_ order: [Int]) async throws {
        for index in order {
            let key = raw.keys[index]
            try await raw.rawSet([index])
            let announced = " s" + Data(key.utf8).base64EncodedString()
            guard await notifications.next(within: .seconds(5), where: { $0.hasSuffix(announced) }) else {
                throw BenchmarkFailure("no notification of \(key) within 5 s")
            }
        }
    }
}

/// What a listening task hands to the benchmark's loop, which waits for one that matches.
private final class Arrivals<Element: Sendable>: Sendable {
    private struct State {
        var arrived: [Element] = []
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func arrived(_ element: Element) {
        let waiter = state.withLock { state in
            state.arrived.append(element)
            return state.waiter.take()
        }
        waiter?.resume()
    }

    /// Whether an element that satisfies `matches` arrives within `limit`; the ones before it
    /// are dropped. One caller at a time.
    func next(within limit: Duration, where matches: (Element) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        let timer = Task {
            try await Task.sleep(until: deadline)
            state.withLock { $0.waiter.take() }?.resume()
        }
        defer { timer.cancel() }
        while true {
            while let element = state.withLock({ $0.arrived.isEmpty ? nil : $0.arrived.removeFirst() }) {
                if matches(element) { return true }
            }
            if ContinuousClock.now >= deadline { return false }
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    // Under the lock the timer takes the waiter with: a timer that woke before
                    // this finds no waiter, but then the deadline has passed here.
                    guard state.arrived.isEmpty, ContinuousClock.now < deadline else { return true }
                    state.waiter = waiter
                    return false
                }
                if ready { waiter.resume() }
            }
        }
    }
}
#else
extension Benchmark {
    /// None: this build has no Postgres trait.
    static var postgres: [Benchmark] { [] }
}
#endif
