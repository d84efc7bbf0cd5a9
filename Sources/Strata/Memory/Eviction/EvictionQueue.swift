import _StrataInternals

/// The order in which a cache evicts its entries: the queue decides, the cache removes.
///
/// Entries are named by their slot index in the cache; a slot index is reused after removal.
/// `hash` is the entry's key hash, the same on every call for one key, for queues that keep
/// frequencies or remember evicted keys. A queue has no lock of its own: the cache calls it only
/// under the cache's lock. It is a class so the cache can hold any policy without copying it.
@usableFromInline
protocol EvictionQueue: AnyObject {
    /// Records that `slot` now holds a new entry whose key hashes to `hash`.
    func recordInsertion(of slot: Int, hash: Int)
    /// Records a read or an overwrite of the entry in `slot`.
    func recordAccess(of slot: Int, hash: Int)
    /// Records a read of a key that is not in the cache (a miss), for frequency-based policies.
    func recordMiss(hash: Int)
    /// Records the cost of the entry in `slot`, before its insertion and before the
    /// ``recordAccess(of:hash:)`` of each write that replaces it. Called only when the cache has a
    /// cost limit, for queues that weigh costs.
    func recordCost(_ cost: Int, of slot: Int)
    /// Records that the entry in `slot` is gone, whether evicted, expired or removed.
    func recordRemoval(of slot: Int)
    /// The slot to evict next, or `nil` when the queue is empty. The cache removes it and then
    /// calls ``recordRemoval(of:)``.
    func victim() -> Int?
    /// The slot to evict next when the entries cost `excessCost` more than the cache's limit (zero
    /// or less when only the count is over), or `nil` when the queue is empty. Queues that weigh
    /// costs answer differently from ``victim()``; the others answer the same.
    func victim(excessCost: Int) -> Int?
    /// Starts loading what ``recordAccess(of:hash:)`` and ``recordMiss(hash:)`` will touch for
    /// `accesses` (a slot of -1 is a miss), so that the cache misses of a batch of reads overlap
    /// instead of following one another. A hint: it changes nothing the queue decides.
    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>)
    /// Forgets every entry.
    func removeAll()
    /// The bytes the policy reserves beyond a link per entry: its frequency sketch and ghost
    /// queues. Sized for the entries held, not the count limit (see
    /// `FrequencySketch.grownCapacity`).
    var reservedByteCount: Int { get }
}

extension EvictionQueue {
    func recordMiss(hash: Int) {}
    func recordCost(_ cost: Int, of slot: Int) {}
    func victim(excessCost: Int) -> Int? { victim() }
    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>) {}
    var reservedByteCount: Int { 0 }
}
