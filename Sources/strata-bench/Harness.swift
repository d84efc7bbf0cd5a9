/// One figure: a workload measured against its raw baseline in the same run.
///
/// A figure is only prepared (its data built, its storages filled) when it runs, so a `--filter`
/// that skips it costs nothing. Add a figure by appending one to ``Benchmark/all``.
struct Benchmark {
    /// The figure's name, such as `memory.get.hit`; `--filter` matches its prefix.
    var name: String
    /// The baseline's name, such as `mutex-dictionary`.
    var baseline: String
    /// Whether heap allocations per operation are counted for the subject and the baseline.
    var countsAllocations = false
    /// Builds the data and the storages, and returns the rounds to time.
    var prepare: () async throws -> Workloads
}

/// What a prepared ``Benchmark`` times: each round performs `operations` operations.
struct Workloads {
    /// A timed piece of work: one call performs every operation of a round.
    typealias Round = () async throws -> Void

    /// The operations one round performs.
    var operations: Int
    /// The thing being measured.
    var subject: Round
    /// The raw baseline it is compared with.
    var baseline: Round
    /// Another figure measured in the same rounds, to report the subject's cost over it in
    /// nanoseconds (the cost of a chain of combinators over the storage it wraps).
    var reference: (name: String, round: Round)? = nil
    /// Counts the workload kept while it ran, such as `source_calls`, read once after the last
    /// round and printed beside the figure.
    var details: (() -> [(name: String, value: Int)])? = nil
    /// Untimed work before each round of the subject (`0`), the baseline (`1`) or the reference
    /// (`2`), warm-up rounds included: see ``KeptFiles``.
    var beforeRound: ((_ label: Int) throws -> Void)? = nil
}

/// The figures of one benchmark, as medians over its rounds.
struct BenchmarkResult {
    var name: String
    var baseline: String
    var nanosecondsPerOperation: Double
    var baselineNanosecondsPerOperation: Double
    /// Heap allocations per operation, when the figure counts them and the counter works.
    var allocationsPerOperation: Double? = nil
    var baselineAllocationsPerOperation: Double? = nil
    var reference: (name: String, nanosecondsPerOperation: Double)? = nil
    /// The workload's own counts (see ``Workloads/details``).
    var details: [(name: String, value: Int)] = []
    /// The spread of the subject's rounds: (slowest − fastest) / median.
    var spread: Double

    /// The subject's time over the baseline's; lower is better.
    var ratio: Double { nanosecondsPerOperation / baselineNanosecondsPerOperation }

    /// How many nanoseconds per operation the subject costs over its reference.
    var differenceFromReference: Double? {
        reference.map { nanosecondsPerOperation - $0.nanosecondsPerOperation }
    }
}

/// Times benchmarks: one untimed warm-up round each, then `rounds` rounds of the subject
/// interleaved with the baseline's (and the reference's), alternating which goes first, keeping
/// the median.
struct Runner {
    var rounds: Int
    /// Whether the allocation counter was verified to work in this process.
    var countsAllocations: Bool

    func run(_ benchmark: Benchmark) async throws -> BenchmarkResult {
        let workloads = try await benchmark.prepare()
        var timed: [(label: Int, round: Workloads.Round)] = [(0, workloads.subject), (1, workloads.baseline)]
        if let reference = workloads.reference {
            timed.append((2, reference.round))
        }
        for (label, round) in timed {
            try workloads.beforeRound?(label)
            try await round()
        }

        var samples: [[Double]] = Array(repeating: [], count: timed.count)
        for index in 0..<rounds {
            let order = index.isMultiple(of: 2) ? timed : timed.reversed()
            for (label, round) in order {
                try workloads.beforeRound?(label)
                samples[label].append(try await time(round, operations: workloads.operations))
            }
        }

        var result = BenchmarkResult(
            name: benchmark.name,
            baseline: benchmark.baseline,
            nanosecondsPerOperation: median(samples[0]),
            baselineNanosecondsPerOperation: median(samples[1]),
            spread: spread(samples[0])
        )
        if let reference = workloads.reference {
            result.reference = (reference.name, median(samples[2]))
        }
        result.details = workloads.details?() ?? []
        if benchmark.countsAllocations, countsAllocations {
            result.allocationsPerOperation = try await AllocationCounter.allocationsPerOperation(
                operations: workloads.operations,
                workloads.subject
            )
            result.baselineAllocationsPerOperation = try await AllocationCounter.allocationsPerOperation(
                operations: workloads.operations,
                workloads.baseline
            )
        }
        return result
    }

    /// Runs one round and returns its nanoseconds per operation.
    private func time(_ round: Workloads.Round, operations: Int) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await round()
        let elapsed = start.duration(to: clock.now)
        return elapsed.nanoseconds / Double(operations)
    }

    private func median(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }

    private func spread(_ samples: [Double]) -> Double {
        guard let fastest = samples.min(), let slowest = samples.max() else { return 0 }
        return (slowest - fastest) / median(samples)
    }
}

extension Duration {
    /// The duration in nanoseconds.
    var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

// Safe: only the task that runs the benchmarks, one round at a time, writes it.
nonisolated(unsafe) private var blackHoleSink = 0

/// Consumes `value` so the optimizer cannot delete the work that produced it.
///
/// A round folds what each operation returns into one integer and hands it here once, so the
/// sink costs nothing per operation.
@inline(never)
func blackHole(_ value: Int) {
    blackHoleSink &+= value
}
