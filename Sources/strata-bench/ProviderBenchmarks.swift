import Foundation
import Strata
import _StrataInternals

/// The figures for providers: what `coordinated()` adds to a burst of concurrent requests for one
/// ID, what a memory-cached provider adds to a `MemoryStorage` hit, and what `coordinated()` adds
/// to that cached hit.
extension Benchmark {
    /// Requests per round of a `provider.coordinated.*` figure, made in bursts of that many waiters.
    static let coordinatedRequests = 20_000
    /// Reads per round of `provider.cached.hit` (twice as many for the hot figure).
    static let cachedHitOperations = 200_000

    static var provider: [Benchmark] {
        [providerCoordinated(waiters: 1), providerCoordinated(waiters: 100), providerCoordinated(waiters: 10_000)]
            + [providerCachedHit, providerCachedHotHit, providerCoordinatedHit, providerBatch]
    }

    /// IDs per load of `provider.batch.1000`, and loads per round.
    static let batchSize = 1_000
    static let batchLoadsPerRound = 10

    /// Loads of 1,000 IDs into an empty cache through `BatchProvider → cache(memory) →
    /// coordinated()`, each load one `values(for:)` call, against the same chain (its own
    /// instances) answering the same 1,000 IDs with one `value(for:)` call after another. The
    /// source answers at once, so the ratio is what each way costs Strata itself; a real source's
    /// round trip multiplies the difference by its own cost (`source_calls` per load: 1 against
    /// 1,000).
    static var providerBatch: Benchmark {
        Benchmark(name: "provider.batch.\(batchSize)", baseline: "single-loads") {
            let ids = Array(0..<batchSize)
            let calls = CallCounter()
            func chain(counting calls: CallCounter?) throws -> (MemoryStorage<Int, Int>, some Provider<Int, Int>) {
                let memory = MemoryStorage<Int, Int>()
                let provider = BatchProvider(name: "batch") { (ids: [Int]) in
                    calls?.record()
                    return Dictionary(uniqueKeysWithValues: ids.map { ($0, $0 &* 3) })
                }
                .cache(memory)
                .coordinated()
                return (memory, provider)
            }
            let (batchMemory, batched) = try chain(counting: calls)
            let (singleMemory, single) = try chain(counting: nil)
            return Workloads(
                operations: batchSize * batchLoadsPerRound,
                subject: {
                    for _ in 0..<batchLoadsPerRound {
                        batchMemory.removeAll()
                        calls.startBurst()
                        let values = try await batched.values(for: ids)
                        precondition(values.count == ids.count && values[9] == 27)
                    }
                },
                baseline: {
                    for _ in 0..<batchLoadsPerRound {
                        singleMemory.removeAll()
                        var sum = 0
                        for id in ids { sum &+= try await single.value(for: id) }
                        precondition(sum == 3 * (ids.count * (ids.count - 1) / 2))
                    }
                },
                details: { [("source_calls", calls.mostPerBurst)] }
            )
        }
    }

    /// Bursts of `waiters` concurrent requests for one ID, each in a task of one task group, through
    /// `coordinated()` over a source that answers as soon as it may; the baseline is the same task
    /// group calling the source directly.
    ///
    /// A source that answered at once would let the first request finish before the others start,
    /// so nothing would be coalesced. So both sources wait at a gate that opens once every request
    /// of the burst is in flight: joined to the fetch (through the subject) or waiting in the source
    /// (the baseline). Both sides pay for the same task group and for one suspension and resumption
    /// per request; the difference is what coalescing adds. `source_calls` is the most calls the
    /// coordinated source received in any one burst, the warm-up included.
    static func providerCoordinated(waiters: Int) -> Benchmark {
        Benchmark(name: "provider.coordinated.\(waiters)", baseline: "direct-calls") {
            let bursts = max(coordinatedRequests / waiters, 2)
            let gate = BurstGate()
            let coordinatedCalls = CallCounter()
            let coordinated = gatedSource(gate: gate, calls: coordinatedCalls).coordinated()
            let direct = gatedSource(gate: gate, calls: CallCounter())
            return Workloads(
                operations: bursts * waiters,
                subject: {
                    for _ in 0..<bursts {
                        coordinatedCalls.startBurst()
                        try await burst(of: waiters, through: coordinated, gate: gate) { coordinated.waitersInFlight }
                    }
                },
                baseline: {
                    for _ in 0..<bursts {
                        try await burst(of: waiters, through: direct, gate: gate) { gate.waiting }
                    }
                },
                details: { [("source_calls", coordinatedCalls.mostPerBurst)] }
            )
        }
    }

    /// Reads of present keys, in a random order, through a provider cached in an unbounded
    /// `MemoryStorage` of the standard data set, against reading the same storage directly: the
    /// figure `memory.get.hit` measures against a locked dictionary.
    static var providerCachedHit: Benchmark {
        providerCachedHit(named: "provider.cached.hit", data: .standard, operations: cachedHitOperations)
    }

    /// The reads of `provider.cached.hit` over 1,000 keys, which fit the processor's caches: with
    /// memory latency out of the way, what remains is what the provider adds to the code path.
    static var providerCachedHotHit: Benchmark {
        providerCachedHit(named: "provider.cached.hot.hit", data: .small, operations: cachedHitOperations * 2)
    }

    private static func providerCachedHit(named name: String, data: DataSet, operations: Int) -> Benchmark {
        Benchmark(name: name, baseline: "memory-storage") {
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let provider = AnyProvider(name: "unreachable") { (key: String) -> Data in
                throw StorageError(.notFound, key: key, storage: "unreachable", message: "every read should hit")
            }
            .cache(storage)
            let probes = data.randomIndices(operations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { try await readAll(probes, through: provider) },
                baseline: { readAll(probes, from: storage) }
            )
        }
    }

    /// The reads of `provider.cached.hit` through the same chain finished with `coordinated()`,
    /// against that chain without it (`provider.cached.hit`'s subject) in the same rounds: what
    /// `coordinated()` adds to a memory hit, which it answers without a continuation or a task.
    static var providerCoordinatedHit: Benchmark {
        Benchmark(name: "provider.coordinated.hit", baseline: "provider.cached.hit", countsAllocations: true) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let cached = AnyProvider(name: "unreachable") { (key: String) -> Data in
                throw StorageError(.notFound, key: key, storage: "unreachable", message: "every read should hit")
            }
            .cache(storage)
            let coordinated = cached.coordinated()
            let probes = data.randomIndices(cachedHitOperations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { try await readAll(probes, through: coordinated) },
                baseline: { try await readAll(probes, through: cached) }
            )
        }
    }

    /// A source of `Int`s that counts its calls and waits at `gate` before answering.
    private static func gatedSource(gate: BurstGate, calls: CallCounter) -> AnyProvider<Int, Int> {
        AnyProvider(name: "gated") { (id: Int) in
            calls.record()
            await gate.pass()
            return id
        }
    }
}

/// Makes `count` concurrent requests in one task group, opens `gate` once `joined()` says all of
/// them are in flight, and closes it again when every answer is in.
@concurrent
private func burst(
    of count: Int,
    through provider: some Provider<Int, Int>,
    gate: BurstGate,
    joined: @Sendable () -> Int
) async throws {
    try await withThrowingTaskGroup(of: Int.self) { group in
        for request in 0..<count {
            group.addTask { try await provider.value(for: 7) &+ request }
        }
        // Bounded: a burst whose requests never all join is a failure, not a hang.
        var polls = 0
        while joined() < count {
            polls += 1
            guard polls < 50_000_000 else {
                throw StorageError(.timedOut, storage: "bench", message: "a burst's requests never all joined")
            }
            await Task.yield()
        }
        gate.open()
        var sum = 0
        for try await value in group {
            sum &+= value
        }
        blackHole(sum)
    }
    gate.close()
}

// `@concurrent` for the reason given at `memory.mapped.get.hit`'s loop: the loop runs on the global
// executor as a server task would, and pays no hop back after each `await`.
@concurrent
private func readAll(
    _ keys: [String],
    through provider: some Provider<String, Data>
) async throws(StorageError) {
    var sum = 0
    for key in keys {
        sum &+= try await provider.value(for: key).count
    }
    blackHole(sum)
}

/// Holds the callers of ``pass()`` until ``open()``; ``close()`` makes later callers wait again.
/// Any task may use it.
final class BurstGate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedState(State())

    /// The number of callers waiting now.
    var waiting: Int {
        state.withLock { $0.waiters.count }
    }

    /// Returns at once while the gate is open, otherwise when it opens.
    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    /// Lets every waiting caller through, and later ones until ``close()``.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll(keepingCapacity: true) }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Makes later callers wait.
    func close() {
        state.withLock { $0.isOpen = false }
    }
}

/// Counts a source's calls per burst and keeps the most any burst made. Any task may use it.
final class CallCounter: Sendable {
    private struct State {
        var current = 0
        var most = 0
    }

    private let state = LockedState(State())

    /// The most calls made in one burst so far.
    var mostPerBurst: Int {
        state.withLock { $0.most }
    }

    /// Starts counting a new burst.
    func startBurst() {
        state.withLock { $0.current = 0 }
    }

    /// Counts one call.
    func record() {
        state.withLock { state in
            state.current += 1
            state.most = max(state.most, state.current)
        }
    }
}

// MARK: Goals

extension Goal {
    /// What providers aim for, from the issue that asked for these figures.
    static var provider: [Goal] {
        [
            Goal(description: "provider.coordinated.10000 adds <= 1000 ns per waiter") { results in
                results["provider.coordinated.10000"].map {
                    let added = $0.nanosecondsPerOperation - $0.baselineNanosecondsPerOperation
                    return (added <= 1000, "\(format(added, 1)) ns per waiter")
                }
            },
            Goal(description: "provider.coordinated.* make exactly 1 source call per burst") { results in
                let calls = results.filter { $0.key.hasPrefix("provider.coordinated.") }.compactMap { result in
                    result.value.details.first { $0.name == "source_calls" }?.value
                }
                guard !calls.isEmpty else { return nil }
                return (calls.allSatisfy { $0 == 1 }, "source_calls \(calls.sorted())")
            },
            Goal(description: "provider.batch.1000 makes 1 source call per load") { results in
                results["provider.batch.1000"].flatMap { result in
                    result.details.first { $0.name == "source_calls" }.map {
                        ($0.value == 1, "source_calls \($0.value)")
                    }
                }
            },
            .ratio(of: "provider.cached.hit", atMost: 1.3),
            .ratio(of: "provider.coordinated.hit", atMost: 1.3),
        ]
    }
}
