import Foundation

/// A target a figure should meet, checked after the run when the figures it needs ran.
struct Goal {
    /// What the goal asks, such as "memory.get.hit ratio <= 1.5".
    var description: String
    /// Returns whether the goal is met and what was measured, or `nil` when a figure it needs did
    /// not run.
    var check: ([String: BenchmarkResult]) -> (met: Bool, measured: String)?
}

extension Goal {
    /// `figure`'s ratio to its baseline is at most `limit`.
    static func ratio(of figure: String, atMost limit: Double) -> Goal {
        Goal(description: "\(figure) ratio <= \(limit)") { results in
            results[figure].map { ($0.ratio <= limit, "ratio \(format($0.ratio, 2))") }
        }
    }
}

/// Prints results as a table, or as one JSON object per line with notes on standard error.
struct Reporter {
    var json: Bool

    private static let columns: [(title: String, width: Int)] = [
        ("figure", 28), ("ns/op", 9), ("baseline", 18), ("ns/op", 9), ("ratio", 7), ("allocs/op", 10),
        ("allocs/op", 10), ("spread", 7),
    ]

    func begin(rounds: Int, allocationCalibration: Double?) {
        let plural = rounds == 1 ? "round" : "rounds"
        note("strata-bench: median of \(rounds) \(plural) per figure, interleaved with the baseline's")
        if let allocationCalibration {
            let status = allocationCalibration >= 1 ? "works" : "does NOT work; allocations are not reported"
            note(
                "allocation counter \(status): \(format(allocationCalibration, 2)) allocations per operation "
                    + "on a loop that allocates one object per operation"
            )
        }
        if !json {
            print("")
            print(row(Self.columns.map(\.title)))
            print(row(Self.columns.map { String(repeating: "-", count: $0.width) }))
        }
    }

    func report(_ result: BenchmarkResult) {
        if json {
            print(jsonLine(result))
        } else {
            print(
                row([
                    result.name, format(result.nanosecondsPerOperation, 1), result.baseline,
                    format(result.baselineNanosecondsPerOperation, 1), format(result.ratio, 2),
                    result.allocationsPerOperation.map { format($0, 3) } ?? "",
                    result.baselineAllocationsPerOperation.map { format($0, 3) } ?? "",
                    "\(format(result.spread * 100, 0))%",
                ])
            )
        }
        fflush(nil)
    }

    func finish(_ results: [BenchmarkResult], goals: [Goal], seconds: Double) {
        if !json {
            print("")
            print("ratio = Strata (or NSCache) / baseline, lower is better; the second ns/op and allocs/op")
            print("columns are the baseline's; spread = (slowest - fastest round) / median of the subject.")
        }
        for result in results {
            if !result.details.isEmpty {
                note("\(result.name): " + result.details.map { "\($0.name) \($0.value)" }.joined(separator: ", "))
            }
            if let reference = result.reference, let difference = result.differenceFromReference {
                note(
                    "\(result.name): \(format(difference, 1)) ns/op over \(reference.name) "
                        + "(\(format(reference.nanosecondsPerOperation, 1)) ns/op in the same rounds)"
                )
            }
        }
        let byName = Dictionary(results.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let checked = goals.compactMap { goal in goal.check(byName).map { (goal.description, $0) } }
        if !checked.isEmpty {
            note("goals:")
            for (description, outcome) in checked {
                note("  [\(outcome.met ? "met" : "NOT met")] \(description): \(outcome.measured)")
            }
        }
        note("run time: \(format(seconds, 1)) s")
    }

    /// Prints a line that is not a figure: to standard output in a table, to standard error
    /// beside JSON lines.
    private func note(_ line: String) {
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            print(line)
        }
    }

    private func row(_ cells: [String]) -> String {
        zip(cells, Self.columns).enumerated().map { index, pair in
            let (cell, column) = pair
            let padding = String(repeating: " ", count: max(column.width - cell.count, 0))
            // Names left-aligned, numbers right-aligned.
            return index == 0 || index == 2 ? cell + padding : padding + cell
        }.joined(separator: " ")
    }

    private func jsonLine(_ result: BenchmarkResult) -> String {
        var fields: [(String, String)] = [
            ("name", quoted(result.name)),
            ("ns_per_op", number(result.nanosecondsPerOperation, 1)),
            ("baseline", quoted(result.baseline)),
            ("baseline_ns_per_op", number(result.baselineNanosecondsPerOperation, 1)),
            ("ratio", number(result.ratio, 2)),
        ]
        if let allocations = result.allocationsPerOperation {
            fields.append(("allocs_per_op", number(allocations, 3)))
        }
        if let allocations = result.baselineAllocationsPerOperation {
            fields.append(("baseline_allocs_per_op", number(allocations, 3)))
        }
        if let reference = result.reference, let difference = result.differenceFromReference {
            fields.append(("reference", quoted(reference.name)))
            fields.append(("reference_ns_per_op", number(reference.nanosecondsPerOperation, 1)))
            fields.append(("ns_over_reference", number(difference, 1)))
        }
        for detail in result.details {
            fields.append((detail.name, "\(detail.value)"))
        }
        return "{" + fields.map { "\(quoted($0)): \($1)" }.joined(separator: ", ") + "}"
    }

    /// `value` rounded to `decimals` places, as the shortest JSON number that reads back as it.
    private func number(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "null" }
        let scale = pow(10, Double(decimals))
        return "\((value * scale).rounded() / scale)"
    }

    private func quoted(_ string: String) -> String {
        var escaped = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\u{0}"..."\u{1F}": escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}

/// `value` with `decimals` places, for the table and the notes.
func format(_ value: Double, _ decimals: Int) -> String {
    String(format: "%.\(decimals)f", value)
}
