/// The order in which a cache evicts its entries: the queue decides, the cache removes.
///
/// Entries are named by their slot index in the cache; a slot index is reused after removal. A
/// queue is a pure value with no lock of its own: the cache calls it under the cache's lock.
protocol EvictionQueue {
    /// Records that `slot` now holds a new entry.
    mutating func recordInsertion(of slot: Int)
    /// Records a read or an overwrite of the entry in `slot`.
    mutating func recordAccess(of slot: Int)
    /// Records that the entry in `slot` is gone.
    mutating func recordRemoval(of slot: Int)
    /// The slot to evict next, or `nil` when the queue is empty.
    func victim() -> Int?
    /// Forgets every entry.
    mutating func removeAll()
}

/// Least-recently-used order as a doubly linked list threaded through two index arrays, so an
/// access moves an entry to the front in O(1) without allocating.
struct LRUQueue: EvictionQueue {
    private var previous: [Int] = []
    private var next: [Int] = []
    /// Most recently used.
    private var head = -1
    /// Least recently used: the next victim.
    private var tail = -1

    init() {}

    private mutating func ensureCapacity(for slot: Int) {
        while previous.count <= slot {
            previous.append(-1)
            next.append(-1)
        }
    }

    private mutating func unlink(_ slot: Int) {
        let before = previous[slot]
        let after = next[slot]
        if before >= 0 { next[before] = after } else { head = after }
        if after >= 0 { previous[after] = before } else { tail = before }
        previous[slot] = -1
        next[slot] = -1
    }

    private mutating func pushFront(_ slot: Int) {
        previous[slot] = -1
        next[slot] = head
        if head >= 0 { previous[head] = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    mutating func recordInsertion(of slot: Int) {
        ensureCapacity(for: slot)
        pushFront(slot)
    }

    mutating func recordAccess(of slot: Int) {
        guard head != slot else { return }
        unlink(slot)
        pushFront(slot)
    }

    mutating func recordRemoval(of slot: Int) {
        unlink(slot)
    }

    func victim() -> Int? {
        tail >= 0 ? tail : nil
    }

    mutating func removeAll() {
        previous.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        head = -1
        tail = -1
    }
}
