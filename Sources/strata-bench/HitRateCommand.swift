import Foundation
import Strata

/// `strata-bench hitrate`: replays traces through real `MemoryStorage` instances, one per eviction
/// policy and cache size, and compares their hit ratios with Belady's offline optimum.
///
/// Each request is a read, followed on a miss by a write of the key (the usual cache-aside use).
/// Cache sizes are 0.1%, 1% and 10% of the trace's distinct keys (100, 1,000 and 10,000 entries for
/// the synthetic traces, whose definitions are those of `HITRATES.md`).
enum HitRateCommand {
    static let usage = """
        USAGE: strata-bench hitrate [--json] [--filter PREFIX]... [--trace FILE [--csv-column N]]...
                                    [--plot FILE.svg] [--sized] [--runs N]
               strata-bench hitrate --print-keys TRACE [--size N]

        Replays each trace through MemoryStorage<Int, Int>(maximumCount: size, evictionPolicy: ...)
        for every policy (lru, w-tinylfu, s3-fifo, and default, the policy used when none is given)
        and prints each hit ratio with its fraction of Belady's offline optimum, and the hit ratios
        of Caffeine 2.6.2 and theine 2.0.0 where they were measured. Synthetic traces (HITRATES.md):
        zipf0.6, zipf0.8, zipf1.0, zipf0.8+scans, shift0.8, loop1.1x, rereference, recency1.0,
        recency0.8, at 10, 30, 100 (0.1%), 1,000 (1%) and 10,000 (10%) entries. A trace file is
        replayed at 0.1%, 1% and 10% of its distinct keys. Figures move by a few tenths of a point
        from run to run, as key hashes are seeded per process (see --runs).

        OPTIONS:
          --json            Print one JSON object per trace, size and policy instead of a table.
          --filter PREFIX   Replay only the synthetic traces whose name starts with PREFIX (repeatable).
          --trace FILE      Replay FILE instead of the synthetic traces: one key per line, or a real
                            trace of ../shared/traces as it is (lirs-* and address-* text, cache2k-*
                            and cloudphysics-* binary, .gz or .xz), at the sizes its REFERENCE.md
                            measured, with Caffeine's and theine's hit ratios beside Strata's (and
                            Caffeine's in the plot). Repeatable: several traces make one table and
                            one plot.
          --csv-column N    With --trace: FILE is CSV and the key is its N-th column, counting from 1.
          --plot FILE.svg   Also write an SVG chart of hit ratio against cache size per trace.
          --sized           Give each key a size from a heavy-tailed distribution (256 B to 4 MiB)
                            and limit the caches by total cost, at 0.1%, 1% and 10% of the trace's
                            bytes, instead of by count; print each policy's hit ratio and byte hit
                            ratio. The synthetic loop, sized for a count, is left out.
          --runs N          Replay everything in N processes, each with its own hash seed, and print
                            each hit ratio's mean and lowest over the N runs.
          --print-keys TRACE  Print the keys of the synthetic TRACE, one per line (for measuring other
                            caches on it), and exit; --size N gives the cache size of loop1.1x.
          -h, --help        Print this help, and exit.
        """

    /// The policies compared, by the name the table and JSON use.
    static let policies: [(name: String, policy: EvictionPolicy)] = [
        ("lru", .leastRecentlyUsed), ("w-tinylfu", .wTinyLFU), ("s3-fifo", .s3FIFO), ("default", .default),
    ]

    /// The cache sizes, as fractions of the distinct keys, and their labels.
    static let sizes: [(label: String, fraction: Double)] = [("0.1%", 0.001), ("1%", 0.01), ("10%", 0.1)]

    /// The synthetic traces by name; the loop depends on the cache size, so each is made per size.
    static let synthetic: [(name: String, make: @Sendable (_ cacheSize: Int) -> Trace)] = [
        ("zipf0.6", { _ in .zipf(0.6) }),
        ("zipf0.8", { _ in .zipf(0.8) }),
        ("zipf1.0", { _ in .zipf(1.0) }),
        ("zipf0.8+scans", { _ in .zipfWithScans() }),
        ("shift0.8", { _ in .shift() }),
        ("loop1.1x", { .loop(cacheSize: $0) }),
        ("rereference", { _ in .rereferences() }),
        ("recency1.0", { _ in .recency(1.0) }),
        ("recency0.8", { _ in .recency(0.8) }),
    ]

    /// The synthetic traces' cache sizes: 0.1%, 1% and 10% of their 100,000 keys, and two small
    /// caches (an app's cache of a screen's images, a server's of its hottest rows).
    static let syntheticSizes: [(label: String, capacity: Int)] = [
        ("10", 10), ("30", 30), ("0.1%", 100), ("1%", 1000), ("10%", 10000),
    ]

    /// Runs the subcommand with `arguments` (those after `hitrate`) and returns the exit status.
    static func run(arguments: [String]) async -> Int32 {
        let options: HitRateOptions
        do {
            options = try HitRateOptions(arguments: arguments)
        } catch {
            FileHandle.standardError.write(Data("strata-bench hitrate: \(error)\n\n\(usage)\n".utf8))
            return 2
        }
        if options.help {
            print(usage)
            return 0
        }
        if let name = options.printKeys {
            guard let trace = synthetic.first(where: { $0.name == name }) else {
                FileHandle.standardError.write(
                    Data("strata-bench hitrate: no synthetic trace is named '\(name)'\n".utf8)
                )
                return 1
            }
            var text = ""
            for key in trace.make(options.printSize ?? 1000).keys { text += "\(key)\n" }
            FileHandle.standardOutput.write(Data(text.utf8))
            return 0
        }
        if options.runs > 1 {
            return HitRateRuns.run(arguments: arguments, runs: options.runs)
        }
        do {
            let clock = ContinuousClock()
            let start = clock.now
            if options.sized {
                let jobs = SizedHitRate.jobs(for: try sizedTraces(options))
                let results = await replayInParallel(jobs, SizedHitRate.replay)
                SizedHitRate.report(results, json: options.json)
                let seconds = Double(start.duration(to: clock.now).components.seconds)
                HitRateReport(json: options.json).note("run time: \(Int(seconds)) s")
                return 0
            }
            let jobs = try makeJobs(options)
            let report = HitRateReport(json: options.json, showsPeers: jobs.contains { $0.caffeine != nil })
            report.begin()
            let results = await replayInParallel(jobs, replayJob)
            report.report(results)
            if let plot = options.plot {
                try HitRatePlot(results: results).write(to: plot)
                report.note("wrote \(plot)")
            }
            let seconds = Double(start.duration(to: clock.now).components.seconds)
            report.note("run time: \(Int(seconds)) s")
            return 0
        } catch {
            FileHandle.standardError.write(Data("strata-bench hitrate: \(error)\n".utf8))
            return 1
        }
    }

    /// One trace at one cache size.
    struct Job: Sendable {
        var trace: String
        var size: String
        var capacity: Int
        var make: @Sendable () -> Trace
        /// Caffeine's and theine's hit ratios (%) at this size, where they were measured.
        var caffeine: Double? = nil
        var theine: Double? = nil
    }

    private static func makeJobs(_ options: HitRateOptions) throws(HitRateError) -> [Job] {
        if !options.tracePaths.isEmpty {
            var jobs: [Job] = []
            for path in options.tracePaths { jobs += try makeJobs(trace: path, csvColumn: options.csvColumn) }
            return jobs
        }
        let selected = synthetic.filter { trace in
            options.filters.isEmpty || options.filters.contains { trace.name.hasPrefix($0) }
        }
        guard !selected.isEmpty else {
            throw HitRateError("no synthetic trace matches \(options.filters)")
        }
        return selected.flatMap { trace in
            syntheticSizes.map { label, capacity in
                let peers = PeerReference.synthetic[trace.name]?.first { $0.size == capacity }
                return Job(
                    trace: trace.name,
                    size: label,
                    capacity: capacity,
                    make: { trace.make(capacity) },
                    caffeine: peers?.caffeine,
                    theine: peers?.theine
                )
            }
        }
    }

    /// The traces `--sized` replays: the files given, or the synthetic traces but the loop.
    private static func sizedTraces(
        _ options: HitRateOptions
    ) throws(HitRateError) -> [(
        name: String, counts: [Int]?, make: @Sendable () -> Trace
    )] {
        if !options.tracePaths.isEmpty {
            var traces: [(name: String, counts: [Int]?, make: @Sendable () -> Trace)] = []
            for path in options.tracePaths {
                let trace = try Trace.load(path: path, csvColumn: options.csvColumn)
                if let reference = PeerReference.sizes(forTraceAt: path) {
                    traces.append((PeerReference.traceName(path), reference.map(\.size), { trace }))
                } else {
                    traces.append((trace.name, nil, { trace }))
                }
            }
            return traces
        }
        let selected = synthetic.filter { trace in
            !trace.name.hasPrefix("loop")
                && (options.filters.isEmpty || options.filters.contains { trace.name.hasPrefix($0) })
        }
        guard !selected.isEmpty else {
            throw HitRateError("no synthetic trace but the loop matches \(options.filters)")
        }
        return selected.map { trace in (trace.name, nil, { trace.make(0) }) }
    }

    /// The jobs of the trace file at `path`.
    private static func makeJobs(trace path: String, csvColumn: Int?) throws(HitRateError) -> [Job] {
        let trace = try Trace.load(path: path, csvColumn: csvColumn)
        // A real trace of ../shared/traces: the sizes REFERENCE.md measured its peers at.
        if let reference = PeerReference.sizes(forTraceAt: path) {
            return reference.map { size, caffeine, theine in
                let label = sizes.first { capacity($0.fraction, of: trace.keySpace) == size }?.label ?? "\(size)"
                return Job(
                    trace: PeerReference.traceName(path),
                    size: label,
                    capacity: size,
                    make: { trace },
                    caffeine: caffeine,
                    theine: theine
                )
            }
        }
        return sizes.map { size in
            Job(
                trace: trace.name,
                size: size.label,
                capacity: capacity(size.fraction, of: trace.keySpace),
                make: { trace }
            )
        }
    }

    private static func capacity(_ fraction: Double, of keySpace: Int) -> Int {
        max(1, Int((fraction * Double(keySpace)).rounded()))
    }

    /// Replays every job, two at a time or as many as there are cores, and returns the results in
    /// the jobs' order.
    private static func replayInParallel<J: Sendable, R: Sendable>(
        _ jobs: [J],
        _ replayJob: @escaping @Sendable (J) -> R
    ) async -> [R] {
        await withTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: jobs.count)
            var next = 0
            let width = max(ProcessInfo.processInfo.activeProcessorCount, 1)
            func addNext() {
                guard next < jobs.count else { return }
                let index = next
                let job = jobs[index]
                group.addTask { (index, replayJob(job)) }
                next += 1
            }
            for _ in 0..<width { addNext() }
            for await (index, result) in group {
                results[index] = result
                addNext()
            }
            return results.compactMap { $0 }
        }
    }

    private static func replayJob(_ job: Job) -> HitRateResult {
        let trace = job.make()
        var hitRatios: [(policy: String, hitRatio: Double)] = []
        for (name, policy) in policies {
            hitRatios.append((name, hitRatio(of: trace.keys, policy: policy, capacity: job.capacity)))
        }
        let belady = Double(beladyHits(trace.keys, capacity: job.capacity)) / Double(trace.keys.count)
        return HitRateResult(
            trace: job.trace,
            size: job.size,
            capacity: job.capacity,
            hitRatios: hitRatios,
            belady: belady,
            caffeine: job.caffeine,
            theine: job.theine
        )
    }

    /// The hit ratio of a cache of `capacity` entries evicting by `policy` on `keys`, read and, on a
    /// miss, written.
    static func hitRatio(of keys: [Int], policy: EvictionPolicy, capacity: Int) -> Double {
        let cache = MemoryStorage<Int, Int>(maximumCount: capacity, evictionPolicy: policy)
        var hits = 0
        for key in keys {
            if cache.value(forKey: key) != nil {
                hits += 1
            } else {
                cache.set(key, forKey: key)
            }
        }
        return keys.isEmpty ? 0 : Double(hits) / Double(keys.count)
    }
}

/// The hit ratios of every policy on one trace at one cache size.
struct HitRateResult: Sendable {
    var trace: String
    var size: String
    var capacity: Int
    /// Each policy's hit ratio, from 0 to 1, in the order of ``HitRateCommand/policies``.
    var hitRatios: [(policy: String, hitRatio: Double)]
    /// Belady's optimum, from 0 to 1.
    var belady: Double
    /// Caffeine 2.6.2's and theine 2.0.0's hit ratios (%) on this trace at this size, from
    /// ``PeerReference``.
    var caffeine: Double? = nil
    var theine: Double? = nil
}

/// A command line `strata-bench hitrate` cannot run, or a trace file it cannot read.
struct HitRateError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// The command line of `strata-bench hitrate`.
struct HitRateOptions {
    var json = false
    var filters: [String] = []
    var tracePaths: [String] = []
    var csvColumn: Int?
    var plot: String?
    var sized = false
    var runs = 1
    var printKeys: String?
    var printSize: Int?
    var help = false

    /// Parses `arguments`, which exclude `strata-bench hitrate`.
    init(arguments: [String]) throws(HitRateError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            func value() throws(HitRateError) -> String {
                if let inlineValue { return inlineValue }
                guard let next = remaining.popFirst() else { throw HitRateError("\(name) needs a value") }
                return next
            }
            switch name {
            case "--json":
                json = true
            case "--filter":
                filters.append(try value())
            case "--trace":
                tracePaths.append(try value())
            case "--csv-column":
                let text = try value()
                guard let column = Int(text), column >= 1 else {
                    throw HitRateError("--csv-column needs a column number from 1, got '\(text)'")
                }
                csvColumn = column
            case "--plot":
                plot = try value()
            case "--sized":
                sized = true
            case "--runs":
                let text = try value()
                guard let count = Int(text), count >= 1 else {
                    throw HitRateError("--runs needs a number of runs from 1, got '\(text)'")
                }
                runs = count
            case "--print-keys":
                printKeys = try value()
            case "--size":
                let text = try value()
                guard let size = Int(text), size >= 1 else {
                    throw HitRateError("--size needs a cache size from 1, got '\(text)'")
                }
                printSize = size
            case "-h", "--help":
                help = true
            default:
                throw HitRateError("unknown argument '\(argument)'")
            }
        }
        if csvColumn != nil, tracePaths.isEmpty {
            throw HitRateError("--csv-column needs --trace")
        }
        if sized, plot != nil {
            throw HitRateError("--plot draws hit ratios against counts; it cannot be used with --sized")
        }
        if printSize != nil, printKeys == nil {
            throw HitRateError("--size gives the loop's size to --print-keys; it needs --print-keys")
        }
        if runs > 1, plot != nil {
            throw HitRateError("--plot draws one run; it cannot be used with --runs")
        }
        if !tracePaths.isEmpty, !filters.isEmpty {
            throw HitRateError("--filter selects synthetic traces; it cannot be used with --trace")
        }
    }
}
