import Foundation
import Strata
import _StrataInternals

/// Figures for reads and writes from several tasks at once: `memory.concurrent.get.hit.<T>` and
/// `memory.concurrent.mixed.<T>`, with T tasks (1, 2 and the core count) each running its own
/// Zipf-0.9 sequence on one bounded `MemoryStorage` of 100,000 entries with the default policy,
/// against ``LockedIntDictionary`` (one `[Int: Int]` behind one lock) driven the same way.
///
/// `memory.concurrent.get.hit.unshared.<T>` is the machine's own ceiling for the same reads: each
/// task reads a `MemoryStorage` of its own (its baseline, a `[Int: Int]` of its own without a
/// lock), so nothing is shared between cores but the memory system. Its scaling is what this
/// machine gives code that shares nothing; the shared figures can approach it, not pass it.
///
/// A figure's ns/op is the round's wall time over every task's operations together, so its
/// inverse is the throughput at T, and `throughput(T = cores) / throughput(1)` is the scaling
/// the goals below read. Keys and values are `Int`: a value with a reference count would add the
/// cost of two cores counting references to the same hot object, which is the value type's cost,
/// not the cache's.
extension Benchmark {
    /// Entries in the storage, every one read at least occasionally.
    static let concurrentEntries = 100_000
    /// Operations per task per round.
    static let concurrentOperations = 400_000

    /// The task counts measured: 1, 2 and the core count.
    static var concurrentTaskCounts: [Int] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return Array(Set([1, 2, cores])).sorted()
    }

    static var concurrent: [Benchmark] {
        concurrentTaskCounts.map { concurrentFigure(tasks: $0, writeShare: 0) }
            + concurrentTaskCounts.map { concurrentFigure(tasks: $0, writeShare: 0.1) }
            + concurrentTaskCounts.map { unsharedFigure(tasks: $0) }
    }

    /// The name of the figure for `tasks` tasks with the given share of writes.
    static func concurrentName(tasks: Int, mixed: Bool) -> String {
        "memory.concurrent.\(mixed ? "mixed" : "get.hit").\(tasks)"
    }

    /// The name of the shared-nothing figure for `tasks` tasks.
    static func unsharedName(tasks: Int) -> String {
        "memory.concurrent.get.hit.unshared.\(tasks)"
    }

    /// One sequence of Zipf-0.9 keys per task; a negative entry is a write of key `~entry`.
    private static func concurrentSequences(tasks: Int, writeShare: Double) -> [[Int]] {
        let sampler = ZipfSampler(count: concurrentEntries, exponent: 0.9)
        let permutation: [Int] = {
            var random = TraceRandom(seed: 9)
            return TraceRandom.permutation(concurrentEntries, using: &random)
        }()
        return (0..<tasks).map { task in
            var random = TraceRandom(seed: 100 + UInt64(task))
            return (0..<concurrentOperations).map { _ in
                let key = permutation[sampler.rank(&random)]
                return random.nextUnitDouble() < writeShare ? ~key : key
            }
        }
    }

    private static func unsharedFigure(tasks: Int) -> Benchmark {
        Benchmark(name: unsharedName(tasks: tasks), baseline: "unshared-dictionary") {
            let storages = (0..<tasks).map { _ in
                let storage = MemoryStorage<Int, Int>(maximumCount: concurrentEntries)
                for key in 0..<concurrentEntries { storage.set(key, forKey: key) }
                return storage
            }
            var dictionary: [Int: Int] = [:]
            for key in 0..<concurrentEntries { dictionary[key] = key }
            let dictionaries = (0..<tasks).map { _ in UnsharedIntDictionary(dictionary) }
            let work = Array(zip(concurrentSequences(tasks: tasks, writeShare: 0), storages))
            let baselineWork = Array(zip(concurrentSequences(tasks: tasks, writeShare: 0), dictionaries))
            return Workloads(
                operations: tasks * concurrentOperations,
                subject: {
                    await runConcurrently(work) { sequence, storage in
                        var sum = 0
                        for key in sequence { sum &+= storage.value(forKey: key) ?? 0 }
                        return sum
                    }
                },
                baseline: {
                    await runConcurrently(baselineWork) { sequence, dictionary in
                        var sum = 0
                        for key in sequence { sum &+= dictionary.entries[key] ?? 0 }
                        return sum
                    }
                }
            )
        }
    }

    private static func concurrentFigure(tasks: Int, writeShare: Double) -> Benchmark {
        Benchmark(name: concurrentName(tasks: tasks, mixed: writeShare > 0), baseline: LockedIntDictionary.name) {
            let storage = MemoryStorage<Int, Int>(maximumCount: concurrentEntries)
            let dictionary = LockedIntDictionary()
            for key in 0..<concurrentEntries {
                storage.set(key, forKey: key)
                dictionary.set(key, forKey: key)
            }
            let sequences = concurrentSequences(tasks: tasks, writeShare: writeShare)
            return Workloads(
                operations: tasks * concurrentOperations,
                subject: {
                    await runConcurrently(sequences) { sequence in
                        var sum = 0
                        for entry in sequence {
                            if entry >= 0 {
                                sum &+= storage.value(forKey: entry) ?? 0
                            } else {
                                storage.set(entry, forKey: ~entry)
                            }
                        }
                        return sum
                    }
                },
                baseline: {
                    await runConcurrently(sequences) { sequence in
                        var sum = 0
                        for entry in sequence {
                            if entry >= 0 {
                                sum &+= dictionary.value(forKey: entry) ?? 0
                            } else {
                                dictionary.set(entry, forKey: ~entry)
                            }
                        }
                        return sum
                    }
                }
            )
        }
    }

    /// Runs `body` once per sequence, each in its own child task, all at once.
    private static func runConcurrently(
        _ sequences: [[Int]],
        _ body: @escaping @Sendable ([Int]) -> Int
    ) async {
        await runConcurrently(sequences.map { ($0, ()) }) { sequence, _ in body(sequence) }
    }

    /// Runs `body` once per pair of a sequence and what its task reads, each in its own child
    /// task, all at once.
    private static func runConcurrently<Subject: Sendable>(
        _ work: [([Int], Subject)],
        _ body: @escaping @Sendable ([Int], Subject) -> Int
    ) async {
        let total = await withTaskGroup(of: Int.self) { group in
            for (sequence, subject) in work {
                group.addTask { body(sequence, subject) }
            }
            return await group.reduce(0, &+)
        }
        blackHole(total)
    }
}

/// The floor of the concurrent figures: one `[Int: Int]` behind one ``PthreadLock``.
final class LockedIntDictionary: @unchecked Sendable {
    static let name = "locked-dictionary"
    // Safe: `dictionary` is only read and written inside `lock`.
    private let lock = PthreadLock()
    private var dictionary: [Int: Int] = [:]

    func value(forKey key: Int) -> Int? {
        lock.withLock { dictionary[key] }
    }

    func set(_ value: Int, forKey key: Int) {
        lock.withLock { dictionary[key] = value }
    }
}

/// The floor of the shared-nothing figure: a `[Int: Int]` that one task reads, with no lock.
final class UnsharedIntDictionary: Sendable {
    let entries: [Int: Int]

    init(_ entries: [Int: Int]) {
        self.entries = entries
    }
}

// MARK: Goals

extension Goal {
    /// What the concurrent figures aim for on this machine: reads that scale with cores, and a
    /// 90/10 mix that scales less but still does.
    static var concurrency: [Goal] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        func scaling(_ mixed: Bool, goal: Double) -> Goal {
            Goal(description: "\(mixed ? "memory.concurrent.mixed" : "memory.concurrent.get.hit") scaling >= \(goal)") {
                results in
                guard cores > 1,
                    let one = results[Benchmark.concurrentName(tasks: 1, mixed: mixed)],
                    let all = results[Benchmark.concurrentName(tasks: cores, mixed: mixed)]
                else { return nil }
                let scaling = one.nanosecondsPerOperation / all.nanosecondsPerOperation
                let baseline = one.baselineNanosecondsPerOperation / all.baselineNanosecondsPerOperation
                let perSecond = { (result: BenchmarkResult) in format(1e3 / result.nanosecondsPerOperation, 1) }
                var ceiling = ""
                if let alone = results[Benchmark.unsharedName(tasks: 1)],
                    let apart = results[Benchmark.unsharedName(tasks: cores)]
                {
                    ceiling =
                        "; sharing nothing: storages \(format(alone.nanosecondsPerOperation / apart.nanosecondsPerOperation, 2)), "
                        + "dictionaries \(format(alone.baselineNanosecondsPerOperation / apart.baselineNanosecondsPerOperation, 2))"
                }
                return (
                    scaling >= goal,
                    "\(format(scaling, 2)) (\(perSecond(one)) → \(perSecond(all)) M ops/s on \(cores) cores; "
                        + "locked dictionary \(format(baseline, 2))\(ceiling))"
                )
            }
        }
        return [scaling(false, goal: 1.6), scaling(true, goal: 1.3)]
    }
}
