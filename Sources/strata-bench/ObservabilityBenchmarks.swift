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
        // `filled(with:)` builds an unobserved storage; this one is filled the same way.
        memoryGetHit(named: "memory.get.hit.metrics", countsAllocations: true) { _ in
            MemoryStorage(metrics: StorageMetrics(prefix: "bench", factory: NOOPMetricsHandler.instance))
        }
    }
}
