import Foundation
import _StrataInternals

/// The counters of a storage whose database keeps the totals (SQLite, PostgreSQL): hits, misses,
/// writes, evictions and expirations counted in this process, published to the storage's metrics
/// as they change; the entries and bytes held come from the database when the statistics are
/// read. Any thread may use it.
package final class StatisticsCounter: Sendable {
    private let counters = LockedState(StorageStatistics())
    /// Where the counters go; `nil` when the storage has no metrics.
    private let observer: StorageObserver?
    private let clock: any StorageClock

    package init(observer: StorageObserver?, clock: any StorageClock) {
        self.observer = observer
        self.clock = clock
    }

    /// Counts what an operation did, and publishes the counters when metrics are on.
    package func count(_ change: (inout StorageStatistics) -> Void) {
        guard let observer else {
            counters.withLock { change(&$0) }
            return
        }
        let counters = counters.withLock { counters in
            change(&counters)
            return counters
        }
        observer.publish(counters, now: clock.now().timeIntervalSince1970, countsEntries: false)
    }

    /// The counters with the database's totals, which also set the metrics' gauges.
    package func statistics(count: Int, totalCost: Int) -> StorageStatistics {
        var statistics = counters.withLock { $0 }
        statistics.count = count
        statistics.totalCost = totalCost
        observer?.publish(statistics, now: clock.now().timeIntervalSince1970)
        return statistics
    }
}
