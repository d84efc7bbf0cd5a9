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
    var reservedByteCount: Int { 0 }
}

/// Least-recently-used order as a doubly linked list threaded through two index arrays, so an
/// access moves an entry to the front in O(1) without allocating.
final class LRUQueue: EvictionQueue {
    // Unchecked: only the owning cache touches the queue, always under its lock, and no method
    // hands out an inout access that could overlap another.
    @exclusivity(unchecked) private var previous: [Int] = []
    @exclusivity(unchecked) private var next: [Int] = []
    /// Most recently used.
    @exclusivity(unchecked) private var head = -1
    /// Least recently used: the next victim.
    @exclusivity(unchecked) private var tail = -1

    init() {}

    private func ensureCapacity(for slot: Int) {
        while previous.count <= slot {
            previous.append(-1)
            next.append(-1)
        }
    }

    private func unlink(_ slot: Int) {
        let before = previous[slot]
        let after = next[slot]
        if before >= 0 { next[before] = after } else { head = after }
        if after >= 0 { previous[after] = before } else { tail = before }
        previous[slot] = -1
        next[slot] = -1
    }

    private func pushFront(_ slot: Int) {
        previous[slot] = -1
        next[slot] = head
        if head >= 0 { previous[head] = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    func recordInsertion(of slot: Int, hash: Int) {
        ensureCapacity(for: slot)
        pushFront(slot)
    }

    func recordAccess(of slot: Int, hash: Int) {
        guard head != slot else { return }
        unlink(slot)
        pushFront(slot)
    }

    func recordRemoval(of slot: Int) {
        unlink(slot)
    }

    func victim() -> Int? {
        tail >= 0 ? tail : nil
    }

    func removeAll() {
        previous.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        head = -1
        tail = -1
    }
}
