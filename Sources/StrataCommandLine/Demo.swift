import ArgumentParser
import Foundation
import Strata
import StrataSQLite
import _StrataInternals

#if Postgres
import StrataPostgres
#endif

/// A source that takes a while to answer, standing in for a network or a database.
struct SlowSource: ReadableStorage {
    let latency: Duration
    let calls: Counter

    func value(forKey key: String) async throws(StorageError) -> String? {
        calls.increment()
        do {
            try await Task.sleep(for: latency)
        } catch {
            throw StorageError(.cancelled, key: key, storage: "SlowSource", message: "the demo was cancelled")
        }
        return "profile of \(key)"
    }
}

/// A thread-safe counter of source calls.
final class Counter: @unchecked Sendable {
    // Safe: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: """
            Put a memory cache in front of a slow source and show what it saves, then fetch images \
            from an HTTP origin in this process through a provider chain.
            """
    )

    @Option(help: "Requests to make.")
    var requests = 40

    @Option(help: "Distinct users the requests ask for.")
    var users = 8

    @Option(help: "How many entries the memory cache keeps.")
    var capacity = 5

    @Option(help: "How long the slow source takes per read, in milliseconds.")
    var latency = 20

    @Flag(help: "Print one line per request.")
    var verbose = false

    @Option(help: "Concurrent requests in each burst of the HTTP part.")
    var burst = 200

    func validate() throws {
        guard requests > 0, users > 0, capacity > 0, latency >= 0, burst > 0 else {
            throw ValidationError("requests, users, capacity and burst must be positive, latency not negative")
        }
    }

    @Option(help: "The disk folder for the second layer (default: a new temporary folder).")
    var folder: String?

    @Option(help: "The second layer: disk (a folder, the default), sqlite (a file) or postgres (a server).")
    var backend: Backend = .disk

    @Option(help: "The SQLite file for --backend sqlite (default: a new temporary file).")
    var sqlite: String?

    @Option(help: "The server for --backend postgres (default: $STRATA_POSTGRES_URL).")
    var postgres: String?

    enum Backend: String, ExpressibleByArgument, CaseIterable {
        case disk, sqlite, postgres
    }

    func run() async throws {
        let source = SlowSource(latency: .milliseconds(latency), calls: Counter())
        switch backend {
        case .disk:
            let folderURL =
                folder.map { URL(fileURLWithPath: $0) }
                ?? FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString)")
            try await runRounds(source: source, layer: "a DiskStorage (\(folderURL.path))") {
                let disk = try DiskStorage(url: folderURL)
                // Said as the SQLite and PostgreSQL layers say it, with what the size counts.
                return Layer(storage: disk, hits: { disk.statistics.hits }) {
                    let statistics = disk.statistics
                    let percent = (statistics.hitRatio * 1000).rounded() / 10
                    return "\(statistics.count) values, \(disk.totalSize) bytes on disk with headers; "
                        + "\(statistics.hits) hits, \(statistics.misses) misses (\(percent)%), \(statistics.writes) writes, "
                        + "\(statistics.evictions) evictions, \(statistics.expirations) expirations"
                }
            }
            if folder == nil {
                try? FileManager.default.removeItem(at: folderURL)
            }
        case .sqlite:
            let path =
                sqlite
                ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                    "strata-demo-\(UUID().uuidString).sqlite"
                )
                .path
            try await runRounds(source: source, layer: "a SQLiteStorage (\(path))") {
                let database = try SQLiteStorage(path: path)
                return Layer(
                    storage: database,
                    hits: { (try? database.statistics().hits) ?? 0 },
                    describe: { (try? database.statistics().description) ?? "?" }
                )
            }
            if sqlite == nil {
                for suffix in ["", "-wal", "-shm"] {
                    try? FileManager.default.removeItem(atPath: path + suffix)
                }
            }
        case .postgres:
            #if Postgres
            guard let url = postgres ?? ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] else {
                throw ValidationError(
                    "--backend postgres needs a server: pass --postgres URL or set STRATA_POSTGRES_URL "
                        + "(eval \"$(scripts/postgres.sh start)\" starts a throwaway one)"
                )
            }
            let table = "strata_demo_\(UInt32.random(in: 0...UInt32.max))"
            let shared = try await PostgresStorage(url: url, options: .init(table: table))
            try await runRounds(
                source: source,
                layer: "a PostgresStorage (table \(table) at \(PostgresStorage.redacted(url)))"
            ) {
                Layer(
                    storage: shared,
                    hits: { (try? await shared.statistics().hits) ?? 0 },
                    describe: { (try? await shared.statistics().description) ?? "?" }
                )
            }
            try await shared.removeAll()
            await shared.close()
            #else
            throw ValidationError(
                "--backend postgres needs a strata built with PostgreSQL: swift run --traits Postgres strata demo ..."
            )
            #endif
        }
        try await ImageDemo(burst: burst).run()
    }

    /// The second layer of the demo and how to report on it.
    struct Layer<S: Storage<String, Data>> {
        var storage: S
        var hits: () async -> UInt64
        var describe: () async -> String
    }

    /// Runs the workload twice over a memory layer in front of `makeLayer()`'s storage.
    private func runRounds<S: Storage<String, Data>>(
        source: SlowSource,
        layer: String,
        makeLayer: () async throws -> Layer<S>
    ) async throws {
        print("Strata demo: a MemoryStorage (at most \(capacity) entries, 60 s to live) over \(layer)")
        print("over a source that takes \(latency) ms per read.")
        print("\(requests) requests for \(users) users, run twice; the second run starts with an empty memory")
        print("layer, as after a restart, and finds what the first run left in the second layer.")

        for run in 1...2 {
            let memory = MemoryStorage<String, String>(maximumCount: capacity, timeToLive: .seconds(60))
            let second = try await makeLayer()
            let profiles = memory.combined(with: second.storage.string()).backed(by: source)
            let callsBefore = source.calls.value

            print("\nRun \(run):")
            // A skewed workload: low-numbered users are asked for far more often.
            var generator = SplitMix64(seed: 2026)
            let clock = ContinuousClock()
            let started = clock.now
            for request in 1...requests {
                let user = "user-\(generator.skewed(below: users))"
                let memoryHits = memory.statistics.hits
                let secondHits = verbose ? await second.hits() : 0
                let requestStart = clock.now
                let profile = try await profiles.value(forKey: user) ?? "(none)"
                let elapsed = clock.now - requestStart
                if verbose {
                    let outcome =
                        memory.statistics.hits > memoryHits
                        ? "memory" : await second.hits() > secondHits ? "second" : "source"
                    print("  #\(request) \(user): \(outcome) in \(format(elapsed)) -> \(profile)")
                }
            }
            let total = clock.now - started
            let calls = source.calls.value - callsBefore
            let uncached = Duration.milliseconds(latency) * requests
            print("  source calls:  \(calls) of \(requests) requests")
            print("  memory:        \(memory.statistics)")
            print("  second layer:  \(await second.describe())")
            print("  time taken:    \(format(total)) (without the caches: about \(format(uncached)))")
            print("  time saved:    about \(format(max(uncached - total, .zero)))")
        }
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds =
            Double(duration.components.seconds) * 1000
            + Double(duration.components.attoseconds) / 1e15
        return milliseconds < 1 ? String(format: "%.3f ms", milliseconds) : String(format: "%.0f ms", milliseconds)
    }
}

extension SplitMix64 {
    /// A number below `bound`, small ones more likely (roughly Zipf-like).
    mutating func skewed(below bound: Int) -> Int {
        let uniform = Double(next() >> 11) / Double(1 << 53)
        return min(Int(Double(bound) * uniform * uniform), bound - 1)
    }
}
