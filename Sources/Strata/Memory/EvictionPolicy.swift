/// Which entries a bounded ``MemoryStorage`` gives up first when it is full.
///
/// Chosen at construction; every policy honours both the count and the cost limit.
public struct EvictionPolicy: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable {
        case leastRecentlyUsed
    }

    let kind: Kind

    /// Evicts the entry read or written longest ago. Simple and fast, but one scan over keys that
    /// are never read again flushes everything useful.
    public static let leastRecentlyUsed = EvictionPolicy(kind: .leastRecentlyUsed)

    /// The policy used when none is given.
    public static let `default` = leastRecentlyUsed

    public var description: String {
        switch kind {
        case .leastRecentlyUsed: "lru"
        }
    }

    /// Makes the queue for a cache of at most `capacity` entries (`Int.max` when unbounded).
    func makeQueue(capacity: Int) -> any EvictionQueue {
        switch kind {
        case .leastRecentlyUsed: LRUQueue()
        }
    }
}
