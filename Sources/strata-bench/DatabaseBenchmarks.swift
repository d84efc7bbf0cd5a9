import Foundation
import GRDB
import Logging
import StrataSQLite

// SQLiteStorage (and, in PostgresBenchmarks.swift, PostgresStorage) against the same statements sent through GRDB and
// postgres-nio directly, on tables of the same schema (made by the storages, triggers included),
// so each ratio is what Strata's layer costs over the driver.

extension Benchmark {
    /// Keys of the database figures.
    static let databaseKeyCount = 1_000
    /// Operations per round of the single-value database figures.
    static let databaseOperations = 300
    /// Values per batch of `sqlite.set.batch1000`.
    static let databaseBatch = 1_000

    static var sqlite: [Benchmark] {
        [sqliteSet, sqliteGet, sqliteSetBatch]
    }

    static var sqliteSet: Benchmark {
        Benchmark(name: "sqlite.set", baseline: "grdb") {
            let pair = try SQLitePair(name: "set")
            let order = DataSet(count: databaseKeyCount, valueByteCount: 0).randomIndices(
                databaseOperations,
                seed: 0xDB
            )
            return Workloads(
                operations: order.count,
                subject: { try pair.storageSet(order) },
                baseline: { try pair.rawSet(order) }
            )
        }
    }

    static var sqliteGet: Benchmark {
        Benchmark(name: "sqlite.get", baseline: "grdb") {
            let pair = try SQLitePair(name: "get")
            try pair.fill()
            let probes = DataSet(count: databaseKeyCount, valueByteCount: 0).randomIndices(databaseOperations * 10)
            return Workloads(
                operations: probes.count,
                subject: { try pair.storageGet(probes) },
                baseline: { try pair.rawGet(probes) }
            )
        }
    }

    static var sqliteSetBatch: Benchmark {
        Benchmark(name: "sqlite.set.batch1000", baseline: "grdb") {
            let pair = try SQLitePair(name: "batch")
            return Workloads(
                operations: databaseBatch,
                subject: { try pair.storageSetBatch() },
                baseline: { try pair.rawSetBatch() }
            )
        }
    }
}

/// A value of 1 KiB whose first bytes name its key's index.
func databaseValue(_ index: Int) -> Data {
    var value = Data("value-\(index)-".utf8)
    value.append(Data(repeating: UInt8(truncatingIfNeeded: index), count: 1024 - value.count))
    return value
}

func databaseKey(_ index: Int) -> String {
    "key-\(index)"
}

/// A SQLiteStorage and a raw GRDB pool on two files of the same schema.
private final class SQLitePair: Sendable {
    static let upsert = """
        INSERT INTO strata_values (key, value, size, expiry, accessed) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET
            value = excluded.value, size = excluded.size,
            expiry = excluded.expiry, accessed = excluded.accessed
        """
    static let select = "SELECT value, expiry, accessed FROM strata_values WHERE key = ?"

    let storage: SQLiteStorage
    let raw: DatabasePool
    let keys = (0..<Benchmark.databaseKeyCount).map(databaseKey)
    let values = (0..<Benchmark.databaseKeyCount).map(databaseValue)

    init(name: String) throws {
        // Under the run's folder, which is removed when the process exits.
        let folder = try DiskBenchmarkFolder.make("sqlite-\(name)")
        storage = try SQLiteStorage(path: folder.appendingPathComponent("strata.sqlite").path)
        let rawPath = folder.appendingPathComponent("raw.sqlite").path
        // The storage creates the schema; the raw pool then uses the file as GRDB would.
        try SQLiteStorage(path: rawPath).close()
        raw = try DatabasePool(path: rawPath)
    }

    func fill() throws {
        try storage.setValues(Dictionary(uniqueKeysWithValues: zip(keys, values)))
        try rawSetBatch()
    }

    func storageSet(_ order: some Sequence<Int>) throws {
        for index in order {
            try storage.set(values[index], forKey: keys[index])
        }
    }

    func rawSet(_ order: some Sequence<Int>) throws {
        for index in order {
            let key = Data(keys[index].utf8)
            let value = values[index]
            let now = Date().timeIntervalSince1970
            try raw.write { db in
                try db.cachedStatement(sql: Self.upsert).execute(
                    arguments: [key, value, value.count + key.count, nil, now]
                )
            }
        }
    }

    func storageGet(_ probes: [Int]) throws {
        var total = 0
        for index in probes {
            total &+= try storage.value(forKey: keys[index])?.count ?? 0
        }
        blackHole(total)
    }

    func rawGet(_ probes: [Int]) throws {
        var total = 0
        for index in probes {
            let key = Data(keys[index].utf8)
            let row = try raw.read { db in try Row.fetchOne(db.cachedStatement(sql: Self.select), arguments: [key]) }
            total &+= (row?[0] as Data?)?.count ?? 0
        }
        blackHole(total)
    }

    func storageSetBatch() throws {
        try storage.setValues(Dictionary(uniqueKeysWithValues: zip(keys, values)))
    }

    func rawSetBatch() throws {
        let now = Date().timeIntervalSince1970
        try raw.write { db in
            let statement = try db.cachedStatement(sql: Self.upsert)
            for (key, value) in zip(keys, values) {
                let bytes = Data(key.utf8)
                try statement.execute(arguments: [bytes, value, value.count + bytes.count, nil, now])
            }
        }
    }
}

// MARK: Goals

extension Goal {
    /// What the SQLite and PostgreSQL storages aim for, from the issue that asked for them; a
    /// `SharedCache`'s invalidation is held to the same bar over raw `LISTEN`/`NOTIFY`.
    static var database: [Goal] {
        [
            "sqlite.set", "sqlite.get", "sqlite.set.batch1000", "postgres.set", "postgres.get",
            "postgres.sharedcache.invalidation",
        ].map { .ratio(of: $0, atMost: 1.15) }
    }
}
