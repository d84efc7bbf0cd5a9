#if Postgres
import Foundation
import Logging
import PostgresNIO
import Strata
import StrataPostgres

// The PostgreSQL figures: PostgresStorage against the same statements sent through postgres-nio.
// Built with the Postgres trait (`swift run -c release --traits Server strata-bench`).
extension Benchmark {
    /// The PostgreSQL figures, when `STRATA_POSTGRES_URL` names a server.
    static var postgres: [Benchmark] {
        [postgresSet, postgresGet]
    }

    static var postgresSet: Benchmark {
        Benchmark(name: "postgres.set", baseline: "postgres-nio") {
            let pair = try await PostgresPair.make()
            let order = DataSet(count: databaseKeyCount, valueByteCount: 0).randomIndices(
                databaseOperations,
                seed: 0xDB
            )
            return Workloads(
                operations: order.count,
                subject: { try await pair.storageSet(order) },
                baseline: { try await pair.rawSet(order) }
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
#else
extension Benchmark {
    /// None: this build has no Postgres trait.
    static var postgres: [Benchmark] { [] }
}
#endif
