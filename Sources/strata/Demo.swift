import ArgumentParser
import Foundation
import Strata

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
            from a local HTTP server through a provider chain.
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

    func run() async throws {
        let source = SlowSource(latency: .milliseconds(latency), calls: Counter())
        let folderURL =
            folder.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString)")
        print("Strata demo: a MemoryStorage (at most \(capacity) entries, 60 s to live) over a DiskStorage")
        print("(\(folderURL.path)) over a source that takes \(latency) ms per read.")
        print("\(requests) requests for \(users) users, run twice; the second run starts with an empty memory")
        print("layer, as after a restart, and finds what the first run left on disk.")

        for run in 1...2 {
            let memory = try MemoryStorage<String, String>(maximumCount: capacity, timeToLive: .seconds(60))
            let disk = try DiskStorage(url: folderURL)
            let profiles = memory.combined(with: disk.string()).backed(by: source)
            let callsBefore = source.calls.value

            print("\nRun \(run):")
            // A skewed workload: low-numbered users are asked for far more often.
            var generator = SplitMix64(seed: 2026)
            let clock = ContinuousClock()
            let started = clock.now
            for request in 1...requests {
                let user = "user-\(generator.skewed(below: users))"
                let memoryHits = memory.statistics.hits
                let diskHits = disk.statistics.hits
                let requestStart = clock.now
                let profile = try await profiles.value(forKey: user) ?? "(none)"
                let elapsed = clock.now - requestStart
                if verbose {
                    let outcome =
                        memory.statistics.hits > memoryHits
                        ? "memory" : disk.statistics.hits > diskHits ? "disk  " : "source"
                    print("  #\(request) \(user): \(outcome) in \(format(elapsed)) -> \(profile)")
                }
            }
            let total = clock.now - started
            let calls = source.calls.value - callsBefore
            let uncached = Duration.milliseconds(latency) * requests
            print("  source calls:  \(calls) of \(requests) requests")
            print("  memory:        \(memory.statistics)")
            print("  disk:          \(disk.statistics)")
            print("  time taken:    \(format(total)) (without the caches: about \(format(uncached)))")
            print("  time saved:    about \(format(max(uncached - total, .zero)))")
        }
        if folder == nil {
            try? FileManager.default.removeItem(at: folderURL)
        }
        try await ImageDemo(burst: burst).run()
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds =
            Double(duration.components.seconds) * 1000
            + Double(duration.components.attoseconds) / 1e15
        return milliseconds < 1 ? String(format: "%.3f ms", milliseconds) : String(format: "%.0f ms", milliseconds)
    }
}

/// A small deterministic random generator, so every run of the demo tells the same story.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number below `bound`, small ones more likely (roughly Zipf-like).
    mutating func skewed(below bound: Int) -> Int {
        let uniform = Double(next() >> 11) / Double(1 << 53)
        return min(Int(Double(bound) * uniform * uniform), bound - 1)
    }
}
