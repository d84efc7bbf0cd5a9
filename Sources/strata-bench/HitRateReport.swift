import Foundation

/// Prints `strata-bench hitrate` results as a table, or as one JSON object per line with notes on
/// standard error.
struct HitRateReport {
    var json: Bool
    /// Whether columns give Caffeine's and theine's hit ratios (``PeerReference``).
    var showsPeers = false

    private var columns: [(title: String, width: Int)] {
        [("trace", 16), ("size", 5)] + HitRateCommand.policies.map { ($0.name, 15) } + [("belady", 7)]
            + (showsPeers ? [("caffeine", 9), ("theine", 7)] : [])
    }

    func begin() {
        note("strata-bench hitrate: get, and set on a miss, through MemoryStorage<Int, Int>")
        if !json {
            print("")
            print(row(columns.map(\.title)))
            print(row(columns.map { String(repeating: "-", count: $0.width) }))
        }
    }

    func report(_ results: [HitRateResult]) {
        for result in results {
            if json {
                for (policy, hitRatio) in result.hitRatios {
                    print(jsonLine(result, policy: policy, hitRatio: hitRatio))
                }
                print(jsonLine(result, policy: "belady", hitRatio: result.belady))
                if let caffeine = result.caffeine {
                    print(jsonLine(result, policy: "caffeine", hitRatio: caffeine / 100))
                }
                if let theine = result.theine {
                    print(jsonLine(result, policy: "theine", hitRatio: theine / 100))
                }
            } else {
                let cells = result.hitRatios.map { _, hitRatio in
                    let fraction = result.belady > 0 ? hitRatio / result.belady : 0
                    return "\(percent(hitRatio)) (\(String(format: "%.2f", fraction)))"
                }
                let peers =
                    showsPeers
                    ? [result.caffeine, result.theine].map { $0.map { String(format: "%.2f", $0) } ?? "-" } : []
                print(row([result.trace, result.size] + cells + [percent(result.belady)] + peers))
            }
        }
        if !json {
            print("")
            print("hit ratio in %, and in parentheses its fraction of belady, the offline optimum")
            print("(evict the key used farthest in the future, or do not keep one used later than all).")
        }
        let comparisons = results.compactMap { result -> PeerComparison? in
            guard let strata = result.hitRatios.first(where: { $0.policy == "default" })?.hitRatio,
                let lru = result.hitRatios.first(where: { $0.policy == "lru" })?.hitRatio
            else { return nil }
            return PeerComparison(
                trace: result.trace,
                size: result.size,
                strata: strata * 100,
                lru: lru * 100,
                caffeine: result.caffeine,
                theine: result.theine
            )
        }
        for line in PeerComparison.summary(comparisons) { note(line) }
    }

    /// Prints a line that is not a result: to standard output beside a table, to standard error
    /// beside JSON lines.
    func note(_ line: String) {
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            print(line)
        }
    }

    private func percent(_ ratio: Double) -> String {
        String(format: "%.2f", ratio * 100)
    }

    private func row(_ cells: [String]) -> String {
        zip(cells, columns).enumerated().map { index, pair in
            let (cell, column) = pair
            let padding = String(repeating: " ", count: max(column.width - cell.count, 0))
            // Names left-aligned, numbers right-aligned.
            return index < 2 ? cell + padding : padding + cell
        }.joined(separator: " ")
    }

    private func jsonLine(_ result: HitRateResult, policy: String, hitRatio: Double) -> String {
        let fields = [
            ("name", quoted("hitrate")), ("trace", quoted(result.trace)), ("size", quoted(result.size)),
            ("policy", quoted(policy)), ("hit_ratio", String(format: "%.4f", hitRatio)),
        ]
        return "{" + fields.map { "\(quoted($0)): \($1)" }.joined(separator: ", ") + "}"
    }

    private func quoted(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "\"" + escaped + "\""
    }
}
