import CoreMetrics
import Foundation
import Strata

/// What metrics cost when they are on: `memory.get.hit` with ``StorageMetrics`` reporting to
/// swift-metrics' no-op handler, so the figure measures Strata's side (snapshots, the publishing
/// lock, the clock reads) and not a backend's. With metrics off, `memory.get.hit` itself is the
/// figure to watch.
extension Benchmark {
    static var observability: [Benchmark] {
        [memoryGetHitWithMetrics]
    }

    static var memoryGetHitWithMetrics: Benchmark {
        Benchmark(name: "memory.get.hit.metrics", baseline: MutexDictionary.name, countsAllocations: true) {
            let data = DataSet.standard
            let metrics = StorageMetrics(prefix: "bench", factory: NOOPMetricsHandler.instance)
            // `filled(with:)` builds an unobserved storage; this one is filled the same way.
            let storage = MemoryStorage<String, Data>(metrics: metrics)
            for (key, value) in zip(data.keys, data.values) {
                storage.set(value, forKey: key)
            }
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: storage) },
                baseline: { readAll(probes, from: dictionary) }
            )
        }
    }
}
