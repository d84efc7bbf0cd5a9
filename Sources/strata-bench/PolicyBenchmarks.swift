import Foundation
import Strata

/// The cost of each eviction policy per operation: `memory.get.hit.<policy>` and
/// `memory.set.evicting.<policy>`, each against ``MutexDictionary`` like the figures they extend.
extension Benchmark {
    /// The policies measured, with the names `strata-bench hitrate` prints.
    static let policies = HitRateCommand.policies

    /// Operations per round of a policy figure: half of ``memoryOperations``, to keep the whole run
    /// under a minute with eight more figures.
    static let policyOperations = memoryOperations / 2

    static var policy: [Benchmark] {
        policies.map { memoryGetHit(policy: $0.policy, named: $0.name) }
            + policies.map {
                memorySetEvicting(
                    policy: $0.policy,
                    named: "memory.set.evicting.\($0.name)",
                    operations: policyOperations
                )
            }
    }

    /// The reads of `memory.get.hit` from a storage bounded at the data set's size, so that the
    /// policy keeps its bookkeeping on every hit but never evicts.
    static func memoryGetHit(policy: EvictionPolicy, named name: String) -> Benchmark {
        memoryGetHit(named: "memory.get.hit.\(name)", operations: policyOperations) { data in
            MemoryStorage(maximumCount: data.count, evictionPolicy: policy)
        }
    }

    /// Sets of distinct keys in turn into a storage limited to 10,000 entries, so that every set
    /// evicts the entry `policy` chooses. The baseline, still named `mutex-dictionary`, is
    /// ``EvictingMutexDictionary``: it evicts the oldest inserted key. With a `timeToLive`, every
    /// set carries it, and the same sets into a storage without one (`memory.set.evicting`) run
    /// in the same rounds as the reference.
    static func memorySetEvicting(
        policy: EvictionPolicy,
        named name: String,
        operations: Int,
        timeToLive: Duration? = nil
    ) -> Benchmark {
        Benchmark(name: name, baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>(
                maximumCount: evictingCount,
                timeToLive: timeToLive,
                evictionPolicy: policy
            )
            let dictionary = EvictingMutexDictionary(maximumCount: evictingCount)
            let keys = (0..<operations).map { data.keys[$0 % data.count] }
            let values = (0..<operations).map { data.values[$0 % data.count] }
            var reference: (name: String, round: Workloads.Round)?
            if timeToLive != nil {
                let plain = MemoryStorage<String, Data>(maximumCount: evictingCount, evictionPolicy: policy)
                reference = ("memory.set.evicting", { writeAll(keys, values, to: plain) })
            }
            return Workloads(
                operations: keys.count,
                subject: { writeAll(keys, values, to: storage) },
                baseline: { writeAll(keys, values, to: dictionary) },
                reference: reference
            )
        }
    }
}
