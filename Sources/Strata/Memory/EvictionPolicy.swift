/// Which entries a bounded ``MemoryStorage`` gives up first when it is full.
///
/// Chosen at construction; every policy honours both the count and the cost limit. The
/// frequency-based policies (``wTinyLFU``, ``s3FIFO`` and ``adaptive``, the default) resist scans
/// and keep popular entries that LRU would evict; `strata-bench hitrate` compares them on
/// synthetic traces or on your own.
public struct EvictionPolicy: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable {
        case leastRecentlyUsed
        case wTinyLFU
        case s3FIFO
        case adaptive
    }

    let kind: Kind

    /// Evicts the entry read or written longest ago.
    ///
    /// Simple, and the cheapest on a hit, but one scan over keys that are never read again flushes
    /// everything useful, and a loop over slightly more keys than fit never hits. Choose it when
    /// recently used entries are the ones read next (a working set that moves quickly) or when
    /// every nanosecond of a hit counts.
    public static let leastRecentlyUsed = EvictionPolicy(kind: .leastRecentlyUsed)

    /// Keeps new entries in a small LRU window and admits them to the main region only if they are
    /// requested more often than the entry they would displace (Window TinyLFU, as in Caffeine).
    ///
    /// Scan-resistant and close to the best published hit ratios on skewed traffic; its frequency
    /// sketch takes about 13 bytes per entry (up to twice that, as tables are rounded up to powers
    /// of two). Choose it to reproduce Caffeine's fixed-window behaviour; ``adaptive`` is usually
    /// better.
    public static let wTinyLFU = EvictionPolicy(kind: .wTinyLFU)

    /// Filters new entries through a small FIFO and keeps those read again in a main FIFO with a
    /// 2-bit frequency (S3-FIFO, SOSP 2023).
    ///
    /// A hit only increments a counter, with no list move, so it is the cheapest scan-resistant
    /// policy; but a loop over slightly more keys than fit hits only about two thirds of the time.
    /// Choose it when hits dominate and their cost matters more than the last points of hit ratio.
    public static let s3FIFO = EvictionPolicy(kind: .s3FIFO)

    /// Window TinyLFU with a longer frequency history, forgotten at once when the popular keys
    /// change, and a window that grows while recency pays; the default.
    ///
    /// On skewed traffic, scans, popularity shifts and loops it matches or beats both ``wTinyLFU``
    /// and ``s3FIFO``. Under a cost limit it weighs costs when it admits an entry: a large entry
    /// takes the room of many small ones only if it is requested more often than they are
    /// together, weighed between their count and their bytes. Its frequency sketches (a long
    /// history and a short one) take about 30 bytes per entry (up to twice that, as tables are
    /// rounded up to powers of two) and at least 21 KB, however small the cache. Choose another
    /// policy only for the reasons given there.
    public static let adaptive = EvictionPolicy(kind: .adaptive)

    /// The policy used when none is given: ``adaptive``.
    public static let `default` = adaptive

    /// The policy's short name, as `strata-bench` prints it: `lru`, `w-tinylfu`, `s3-fifo` or
    /// `adaptive`.
    public var description: String {
        switch kind {
        case .leastRecentlyUsed: "lru"
        case .wTinyLFU: "w-tinylfu"
        case .s3FIFO: "s3-fifo"
        case .adaptive: "adaptive"
        }
    }

    /// Makes the queue for a cache of at most `capacity` entries costing at most `maximumCost`
    /// (each `Int.max` when unbounded).
    func makeQueue(capacity: Int, maximumCost: Int = .max) -> any EvictionQueue {
        switch kind {
        case .leastRecentlyUsed: LRUQueue()
        case .wTinyLFU: WTinyLFUQueue(capacity: capacity, maximumCost: maximumCost)
        case .s3FIFO: S3FIFOQueue(capacity: capacity)
        case .adaptive: AdaptiveQueue(capacity: capacity, maximumCost: maximumCost)
        }
    }
}
