/// A snapshot of what a ``MemoryStorage`` has done since it was created.
public struct MemoryStorageStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Reads that found a live value.
    public var hits: UInt64 = 0
    /// Reads that found nothing, or only an expired value.
    public var misses: UInt64 = 0
    /// Values stored by `set` or `update`.
    public var insertions: UInt64 = 0
    /// Entries removed to keep the count or cost limit.
    public var evictions: UInt64 = 0
    /// Entries removed because their time to live had passed.
    public var expirations: UInt64 = 0
    /// Values not kept because their cost alone exceeded the cost limit.
    public var rejections: UInt64 = 0
    /// Entries held when the snapshot was taken, expired ones included until they are removed.
    public var count = 0
    /// The total cost of the entries held when the snapshot was taken.
    public var totalCost = 0

    /// Creates an empty snapshot.
    public init() {}

    /// Hits divided by reads; 0 before the first read.
    public var hitRatio: Double {
        let reads = hits + misses
        return reads == 0 ? 0 : Double(hits) / Double(reads)
    }

    public var description: String {
        let percent = (hitRatio * 1000).rounded() / 10
        return "hits \(hits), misses \(misses) (hit ratio \(percent)%), insertions \(insertions), "
            + "evictions \(evictions), expirations \(expirations), rejections \(rejections), "
            + "count \(count), cost \(totalCost)"
    }
}
