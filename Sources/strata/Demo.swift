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
        abstract: "Put a memory cache in front of a slow source and show what it saves."
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

    func validate() throws {
        guard requests > 0, users > 0, capacity > 0, latency >= 0 else {
            throw ValidationError("requests, users and capacity must be positive, latency not negative")
        }
    }

    func run() async throws {
        let source = SlowSource(latency: .milliseconds(latency), calls: Counter())
        let memory = try MemoryStorage<String, String>(maximumCount: capacity, timeToLive: .seconds(60))
        let profiles = memory.backed(by: source)

        print("Strata demo: a MemoryStorage (at most \(capacity) entries, 60 s to live)")
        print("in front of a source that takes \(latency) ms per read; \(requests) requests for \(users) users.\n")

        // A skewed workload: low-numbered users are asked for far more often.
        var generator = SplitMix64(seed: 2026)
        let clock = ContinuousClock()
        let started = clock.now
        for request in 1...requests {
            let user = "user-\(generator.skewed(below: users))"
            let before = memory.statistics.hits
            let requestStart = clock.now
            let profile = try await profiles.value(forKey: user) ?? "(none)"
            let elapsed = clock.now - requestStart
            if verbose {
                let outcome = memory.statistics.hits > before ? "hit " : "miss"
                print("  #\(request) \(user): \(outcome) in \(format(elapsed)) -> \(profile)")
            }
        }
        let total = clock.now - started
        let statistics = memory.statistics
        let uncached = Duration.milliseconds(latency) * requests
        print("Requests:       \(requests)")
        print("Source calls:   \(source.calls.value)")
        print("Cache:          \(statistics)")
        print("Time taken:     \(format(total)) (without the cache: about \(format(uncached)))")
        print("Time saved:     about \(format(max(uncached - total, .zero)))")
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds = Double(duration.components.seconds) * 1000
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
