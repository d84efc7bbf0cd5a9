import Foundation
import Strata
import _StrataInternals

/// `strata-bench hitrate --sized`: the same traces with a size per key, drawn from a heavy-tailed
/// distribution, replayed through caches limited by total cost (bytes) instead of count. Reports
/// each policy's hit ratio (requests served) and byte hit ratio (bytes served).
///
/// Sizes follow a bounded Pareto distribution (shape 1.2, 256 B to 4 MiB, mean about 1.4 KiB),
/// drawn once per key from its number, independent of its popularity: most values are small and a
/// few are thousands of times larger, as with the responses of a web server. Cache limits are
/// 0.1%, 1% and 10% of the bytes of the trace's distinct keys, or for the real traces of
/// `../shared/traces` the entry counts REFERENCE.md uses times the mean size of a key; a value
/// larger than the limit is never kept, by any policy.
enum SizedHitRate {
    /// The size of `key`'s value in bytes.
    static func size(ofKey key: Int) -> Int {
        var random = TraceRandom(seed: UInt64(bitPattern: Int64(key)) &* 0x2545_F491_4F6C_DD1D)
        let uniform = 1 - random.nextUnitDouble()  // (0, 1]
        let size = 256 * pow(uniform, -1 / 1.2)
        return Int(min(size, 4_194_304))
    }

    /// One trace at one cost limit.
    struct Job: Sendable {
        var trace: String
        var size: String
        var maximumCost: Int
        var make: @Sendable () -> Trace
    }

    /// The hit ratio and byte hit ratio of every policy on one trace at one cost limit.
    struct Result: Sendable {
        var trace: String
        var size: String
        var maximumCost: Int
        var ratios: [(policy: String, hitRatio: Double, byteHitRatio: Double)]
    }

    /// The jobs for `traces`: each at 0.1%, 1% and 10% of its distinct keys' bytes, or, for a real
    /// trace of `../shared/traces`, at the entry counts REFERENCE.md uses times the mean size.
    static func jobs(for traces: [(name: String, counts: [Int]?, make: @Sendable () -> Trace)]) -> [Job] {
        traces.flatMap { trace in
            let keys = Set(trace.make().keys)
            let totalBytes = keys.reduce(0) { $0 + size(ofKey: $1) }
            if let counts = trace.counts {
                return counts.map { count in
                    Job(
                        trace: trace.name,
                        size: "\(count)",
                        maximumCost: max(1, totalBytes / max(keys.count, 1) * count),
                        make: trace.make
                    )
                }
            }
            return HitRateCommand.sizes.map { size in
                Job(
                    trace: trace.name,
                    size: size.label,
                    maximumCost: max(1, Int(Double(totalBytes) * size.fraction)),
                    make: trace.make
                )
            }
        }
    }

    static func replay(_ job: Job) -> Result {
        let trace = job.make()
        let measured = HitRateCommand.policies.map { name, policy in
            let (hits, bytes) = ratios(of: trace.keys, policy: policy, maximumCost: job.maximumCost)
            return (name, hits, bytes)
        }
        return Result(trace: job.trace, size: job.size, maximumCost: job.maximumCost, ratios: measured)
    }

    /// Reads each key and, on a miss, writes it with its size as its cost.
    static func ratios(of keys: [Int], policy: EvictionPolicy, maximumCost: Int) -> (Double, Double) {
        let cache = MemoryStorage<Int, Int>(
            maximumCost: maximumCost,
            evictionPolicy: policy,
            cost: { size(ofKey: $0) }
        )
        var hits = 0
        var hitBytes = 0
        var totalBytes = 0
        for key in keys {
            let bytes = size(ofKey: key)
            totalBytes += bytes
            if cache.value(forKey: key) != nil {
                hits += 1
                hitBytes += bytes
            } else {
                cache.set(key, forKey: key)
            }
        }
        guard !keys.isEmpty else { return (0, 0) }
        return (Double(hits) / Double(keys.count), Double(hitBytes) / Double(totalBytes))
    }

    /// Prints `results` as a table, or as JSON lines.
    static func report(_ results: [Result], json: Bool) {
        let policies = HitRateCommand.policies.map(\.name)
        if json {
            for result in results {
                for ratio in result.ratios {
                    print(
                        "{\"name\": \"hitrate.sized\", \"trace\": \"\(result.trace)\", \"size\": \"\(result.size)\", "
                            + "\"policy\": \"\(ratio.policy)\", \"hit_ratio\": \(String(format: "%.4f", ratio.hitRatio)), "
                            + "\"byte_hit_ratio\": \(String(format: "%.4f", ratio.byteHitRatio))}"
                    )
                }
            }
            return
        }
        func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
            let padding = String(repeating: " ", count: max(width - text.count, 0))
            return left ? text + padding : padding + text
        }
        print("")
        print(
            pad("trace", 16, left: true) + " " + pad("size", 5, left: true) + " "
                + policies.map { pad($0, 15) }.joined(separator: " ")
        )
        print(([16, 5] + policies.map { _ in 15 }).map { String(repeating: "-", count: $0) }.joined(separator: " "))
        for result in results {
            let cells = result.ratios.map { ratio in
                pad(String(format: "%.2f / %.2f", ratio.hitRatio * 100, ratio.byteHitRatio * 100), 15)
            }
            print(
                pad(result.trace, 16, left: true) + " " + pad(result.size, 5, left: true) + " "
                    + cells.joined(separator: " ")
            )
        }
        print("")
        print("hit ratio / byte hit ratio in %: requests served, and bytes served, from the cache")
        let margins = results.compactMap { result -> (Double, Double)? in
            guard let strata = result.ratios.first(where: { $0.policy == "default" }),
                let frequency = result.ratios.first(where: { $0.policy == "w-tinylfu" })
            else { return nil }
            return ((strata.hitRatio - frequency.hitRatio) * 100, (strata.byteHitRatio - frequency.byteHitRatio) * 100)
        }
        guard !margins.isEmpty else { return }
        let count = Double(margins.count)
        let belowOnBytes = margins.filter { $0.1 < 0 }.count
        print(
            "default against w-tinylfu (admission by frequency alone): "
                + String(format: "%+.2f", margins.map(\.0).reduce(0, +) / count) + " points of hit ratio and "
                + String(format: "%+.2f", margins.map(\.1).reduce(0, +) / count) + " of byte hit ratio on average over "
                + "\(margins.count) sizes; byte hit ratio lower at \(belowOnBytes)"
        )
    }
}
