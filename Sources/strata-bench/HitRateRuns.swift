import Foundation

/// The default policy against LRU, Caffeine 2.6.2 and theine 2.0.0 at one trace and size, for the
/// goal `strata-bench hitrate` checks: at least the best of the three less half a point at every
/// size, and Caffeine plus 1.5 points on average over the real traces.
struct PeerComparison {
    var trace: String
    var size: String
    /// Hit ratios in %; `strata` is the mean over the runs, and `lowest` the lowest run's, when
    /// there were several (`--runs`).
    var strata: Double
    var lru: Double
    var caffeine: Double?
    var theine: Double?
    var lowest: Double? = nil

    /// The traces held out of tuning: the eviction guide's validation half. The rest are the
    /// tuning half.
    static let validationTraces: Set<String> = [
        "cache2k-web12", "lirs-cs", "lirs-multi2", "lirs-ps", "lirs-zigzag", "lirs-backf", "address-gzip",
        "address-mcf", "address-twolf", "cloudphysics-w106", "zipf0.6", "zipf1.0", "shift0.8", "recency0.8",
    ]

    /// The best of LRU and the peers measured here.
    var best: Double {
        max(lru, caffeine ?? 0, theine ?? 0)
    }

    /// The summary lines of `comparisons`: per half, how many sizes are more than half a point
    /// below the best, which, and the mean margin over Caffeine; over `runs` runs, also how many
    /// are that far below in their lowest run, and (over all sizes) which.
    static func summary(_ comparisons: [PeerComparison], runs: Int = 1) -> [String] {
        let measured = comparisons.filter { $0.caffeine != nil }
        guard !measured.isEmpty else { return [] }
        var lines: [String] = []
        let halves = [
            ("tuning half", measured.filter { !validationTraces.contains($0.trace) }),
            ("validation half", measured.filter { validationTraces.contains($0.trace) }),
        ]
        for (name, half) in halves + [("all", measured)] where !half.isEmpty {
            let below = half.filter { $0.strata < $0.best - 0.5 }
            let margin = half.map { $0.strata - $0.caffeine! }.reduce(0, +) / Double(half.count)
            let lowest = half.min { $0.strata - $0.best < $1.strata - $1.best }!
            let belowInARun = runs > 1 ? half.filter { ($0.lowest ?? $0.strata) < $0.best - 0.5 } : []
            let inARun =
                runs > 1 ? "; in the lowest of the \(runs) runs, \(belowInARun.count) of \(half.count) sizes" : ""
            lines.append(
                "default, \(name): \(below.count) of \(half.count) sizes more than 0.5 points below the best of "
                    + "lru, caffeine and theine; lowest margin \(String(format: "%+.2f", lowest.strata - lowest.best)) "
                    + "(\(lowest.trace) at \(lowest.size)); \(String(format: "%+.2f", margin)) points over caffeine on average"
                    + inARun
            )
            for comparison in below {
                lines.append(
                    "  \(comparison.trace) at \(comparison.size): \(String(format: "%.2f", comparison.strata)), "
                        + "best \(String(format: "%.2f", comparison.best))"
                )
            }
            for comparison in belowInARun where name == "all" {
                lines.append(
                    "  \(comparison.trace) at \(comparison.size): lowest run \(String(format: "%.2f", comparison.lowest!)), "
                        + "best \(String(format: "%.2f", comparison.best))"
                )
            }
        }
        return lines
    }
}

/// `strata-bench hitrate --runs N`: the same replay in N processes, since key hashes are seeded
/// per process, and each hit ratio's mean and lowest.
enum HitRateRuns {
    /// Runs this executable `runs` times with `arguments` (less `--runs`) and `--json`, and prints
    /// the table of means and lows. Returns the exit status.
    static func run(arguments: [String], runs: Int) -> Int32 {
        var single: [String] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--runs" {
                _ = remaining.popFirst()
            } else if !argument.hasPrefix("--runs="), argument != "--json" {
                single.append(argument)
            }
        }
        var order: [String] = []
        var samples: [String: [Double]] = [:]
        var rows: [String: (trace: String, size: String)] = [:]
        var policies: [String] = []
        for run in 1...runs {
            FileHandle.standardError.write(Data("strata-bench hitrate: run \(run) of \(runs)\n".utf8))
            guard let lines = replayOnce(single + ["--json"]) else { return 1 }
            for line in lines {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let trace = object["trace"] as? String, let size = object["size"] as? String,
                    let policy = object["policy"] as? String, let hitRatio = object["hit_ratio"] as? Double
                else { continue }
                let row = trace + "\u{0}" + size
                if rows[row] == nil {
                    rows[row] = (trace, size)
                    order.append(row)
                }
                if !policies.contains(policy) { policies.append(policy) }
                samples[row + "\u{0}" + policy, default: []].append(hitRatio * 100)
            }
        }
        print("hit ratio in % over \(runs) runs: mean (lowest)")
        print(([pad("trace", 18), pad("size", 6)] + policies.map { pad($0, 15, right: true) }).joined(separator: " "))
        var comparisons: [PeerComparison] = []
        for row in order {
            let (trace, size) = rows[row]!
            var cells: [String] = []
            var means: [String: Double] = [:]
            var lows: [String: Double] = [:]
            for policy in policies {
                let values = samples[row + "\u{0}" + policy] ?? []
                guard !values.isEmpty else {
                    cells.append(pad("-", 15, right: true))
                    continue
                }
                let mean = values.reduce(0, +) / Double(values.count)
                means[policy] = mean
                lows[policy] = values.min()!
                let varies = values.max()! - values.min()! > 0.005
                let cell = String(format: "%.2f", mean) + (varies ? String(format: " (%.2f)", values.min()!) : "")
                cells.append(pad(cell, 15, right: true))
            }
            print(([pad(trace, 18), pad(size, 6)] + cells).joined(separator: " "))
            if let strata = means["default"], let lru = means["lru"] {
                comparisons.append(
                    PeerComparison(
                        trace: trace,
                        size: size,
                        strata: strata,
                        lru: lru,
                        caffeine: means["caffeine"],
                        theine: means["theine"],
                        lowest: lows["default"]
                    )
                )
            }
        }
        print("")
        for line in PeerComparison.summary(comparisons, runs: runs) { print(line) }
        return 0
    }

    /// The JSON lines of one run, or `nil` (with the reason on standard error) if it failed.
    private static func replayOnce(_ arguments: [String]) -> [String]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["hitrate"] + arguments
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(
                Data("strata-bench hitrate: cannot run \(CommandLine.arguments[0]): \(error)\n".utf8)
            )
            return nil
        }
        let data = (try? output.fileHandleForReading.readToEnd()) ?? Data()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            FileHandle.standardError.write(
                Data("strata-bench hitrate: a run exited with \(process.terminationStatus)\n".utf8)
            )
            return nil
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(width - text.count, 0))
        return right ? padding + text : text + padding
    }
}
