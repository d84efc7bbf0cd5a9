import _StrataInternals

/// Least-recently-used order as one doubly linked list of slots (``SlotLinks``), so an access
/// moves an entry to the front in O(1) without allocating.
final class LRUQueue: EvictionQueue {
    // Unchecked: only the owning cache touches the queue, always under its lock, and no method
    // hands out an inout access that could overlap another.
    @exclusivity(unchecked) private var links = SlotLinks()
    /// Most recently used at the head; the tail is the next victim.
    @exclusivity(unchecked) private var list = SlotLinks.List()

    init() {}

    func recordInsertion(of slot: Int, hash: Int) {
        links.ensureCapacity(for: slot)
        links.pushHead(slot, onto: &list)
    }

    func recordAccess(of slot: Int, hash: Int) {
        links.moveToHead(slot, in: &list)
    }

    func recordRemoval(of slot: Int) {
        links.unlink(slot, from: &list)
    }

    func victim() -> Int? {
        list.tail >= 0 ? list.tail : nil
    }

    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>) {
        links.prefetch(accesses)
    }

    func removeAll() {
        links.removeAll()
        list = SlotLinks.List()
    }
}
