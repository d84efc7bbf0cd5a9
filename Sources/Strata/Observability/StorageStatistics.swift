/// A snapshot of what a storage has done since it was created or opened: reads, writes, what it
/// dropped and why, and what it holds.
///
/// Every storage of the package returns one: ``MemoryStorage`` and ``DiskStorage`` from
/// `statistics`, `SQLiteStorage` and `PostgresStorage` from `statistics()` (which asks the
/// database for its totals), so a user without a metrics backend can still print a hit ratio,
/// the same way for every backend. The counters are the same figures the storage reports through
/// ``StorageMetrics`` when metrics are on. A figure a backend does not keep stays 0.
public struct StorageStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Reads that found a live value.
    public var hits: UInt64 = 0
    /// Reads that found nothing, an expired value or (in a disk cache) a damaged file.
    public var misses: UInt64 = 0
    /// Values stored by `set` or `update`.
    public var writes: UInt64 = 0
    /// Entries removed to keep the count limit.
    public var countEvictions: UInt64 = 0
    /// Entries removed to keep the cost limit (bytes, for ``DiskStorage``), by a write or by
    /// `trim`.
    public var sizeEvictions: UInt64 = 0
    /// Entries evicted to give memory back to the system under pressure (see
    /// ``MemoryPressureResponse``); not part of ``evictions``, which keep a limit.
    public var pressureEvictions: UInt64 = 0
    /// Entries removed because their time to live had passed.
    public var expirations: UInt64 = 0
    /// Values not kept because their cost alone exceeded the cost limit.
    public var rejections: UInt64 = 0
    /// Damaged or foreign files found where a value should be, removed in cache mode; always 0
    /// for a ``MemoryStorage``.
    public var damagedFiles: UInt64 = 0
    /// Files of evicted or expired values that could not be removed (a read-only or failing
    /// disk): each is logged, stays on disk and is found again by a later read or open. Always 0
    /// for a ``MemoryStorage``; not reported as a metric.
    public var removalFailures: UInt64 = 0
    /// Reads whose access time could not be recorded (a SQLite database whose write lock another
    /// connection held past the busy timeout, or a read-only file); each returned its value all
    /// the same, and the key only looks older to the eviction order. Not reported as a metric.
    public var recencyWriteFailures: UInt64 = 0
    /// Entries held when the snapshot was taken (a ``MemoryStorage`` counts expired ones until
    /// they are removed).
    public var count = 0
    /// The total cost of the entries held when the snapshot was taken: for a ``DiskStorage``,
    /// the bytes its value files take, headers included; for a database, the bytes of its keys
    /// and values.
    public var totalCost = 0

    /// Creates an empty snapshot.
    public init() {}

    /// Entries removed to keep a limit, by count or by cost.
    public var evictions: UInt64 {
        countEvictions &+ sizeEvictions
    }

    /// Hits divided by reads; 0 before the first read.
    public var hitRatio: Double {
        let reads = hits + misses
        return reads == 0 ? 0 : Double(hits) / Double(reads)
    }

    /// Every figure under the name ``StorageMetrics`` gives it (without the prefix), in a fixed
    /// order: `entries`, `bytes`, `hits`, `misses`, `hit_ratio`, `writes`,
    /// `evictions{reason=count}`, `evictions{reason=size}`, `evictions{reason=expiry}`,
    /// `evictions{reason=memory_pressure}`, `rejections`, `damaged_files`. `strata stats` prints these.
    public var figures: [(name: String, value: Double)] {
        [
            ("entries", Double(count)),
            ("bytes", Double(totalCost)),
            ("hits", Double(hits)),
            ("misses", Double(misses)),
            ("hit_ratio", hitRatio),
            ("writes", Double(writes)),
            ("evictions{reason=count}", Double(countEvictions)),
            ("evictions{reason=size}", Double(sizeEvictions)),
            ("evictions{reason=expiry}", Double(expirations)),
            ("evictions{reason=memory_pressure}", Double(pressureEvictions)),
            ("rejections", Double(rejections)),
            ("damaged_files", Double(damagedFiles)),
        ]
    }

    /// One line for a person, such as `hits 3, misses 1 (hit ratio 75.0%), writes 2, …`.
    public var description: String {
        let percent = (hitRatio * 1000).rounded() / 10
        return "hits \(hits), misses \(misses) (hit ratio \(percent)%), writes \(writes), "
            + "evictions \(evictions) (count \(countEvictions), size \(sizeEvictions)), "
            + "pressure evictions \(pressureEvictions), expirations \(expirations), rejections \(rejections), damaged files \(damagedFiles), "
            + "count \(count), cost \(totalCost)"
    }
}
