import _StrataInternals

/// Doubly linked lists of slot indices threaded through one shared array of links, for eviction
/// queues that keep entries in one or several ordered regions. A slot is in at most one list at a
/// time.
///
/// Linking and unlinking are O(1) and never allocate; the array grows only when a slot index is
/// seen for the first time. A slot's two links sit side by side, so that moving an entry of a
/// large cache costs one cache miss for it and one for each neighbour, and
/// ``prefetch(_:)`` and ``prefetchNeighbours(of:)`` let a batch of moves start those misses
/// together.
struct SlotLinks {
    /// The two ends of one list and its length.
    struct List {
        /// The most recently pushed slot, or -1.
        var head = -1
        /// The least recently pushed slot (the oldest), or -1.
        var tail = -1
        var count = 0

        var isEmpty: Bool { count == 0 }
    }

    /// A slot's neighbours: towards the head (`previous`) and towards the tail (`next`), -1 at
    /// either end or for a slot in no list.
    private struct Link {
        var previous = -1
        var next = -1
    }

    private var links: [Link] = []

    /// The number of slot indices the array covers.
    var slotCount: Int { links.count }

    /// Makes room for `slot`.
    mutating func ensureCapacity(for slot: Int) {
        if links.count <= slot {
            links.append(contentsOf: repeatElement(Link(), count: slot + 1 - links.count))
        }
    }

    /// The slot pushed just before `slot` onto its list (towards the head), or -1.
    func newer(than slot: Int) -> Int {
        links[slot].previous
    }

    /// Puts `slot`, which is in no list, at the head of `list`.
    mutating func pushHead(_ slot: Int, onto list: inout List) {
        links[slot] = Link(previous: -1, next: list.head)
        if list.head >= 0 { links[list.head].previous = slot }
        list.head = slot
        if list.tail < 0 { list.tail = slot }
        list.count += 1
    }

    /// Takes `slot` out of `list`, which holds it.
    mutating func unlink(_ slot: Int, from list: inout List) {
        let link = links[slot]
        if link.previous >= 0 { links[link.previous].next = link.next } else { list.head = link.next }
        if link.next >= 0 { links[link.next].previous = link.previous } else { list.tail = link.previous }
        links[slot] = Link()
        list.count -= 1
    }

    /// Moves `slot`, which is in `list`, to its head.
    mutating func moveToHead(_ slot: Int, in list: inout List) {
        guard list.head != slot else { return }
        unlink(slot, from: &list)
        pushHead(slot, onto: &list)
    }

    /// Starts loading `slot`'s links, if the array covers it. A hint: nothing changes.
    func prefetch(_ slot: Int) {
        guard slot >= 0, slot < links.count else { return }
        links.withUnsafeBufferPointer { Strata.prefetch($0.baseAddress! + slot) }
    }

    /// Starts loading the links of `slot`'s neighbours, which moving it changes. Reads `slot`'s
    /// own links, so it is worth calling once those have arrived (after ``prefetch(_:)`` for a
    /// batch). A hint: nothing changes.
    func prefetchNeighbours(of slot: Int) {
        guard slot >= 0, slot < links.count else { return }
        links.withUnsafeBufferPointer { links in
            let link = links[slot]
            if link.previous >= 0 { Strata.prefetch(links.baseAddress! + link.previous) }
            if link.next >= 0 { Strata.prefetch(links.baseAddress! + link.next) }
        }
    }

    /// Starts loading what moving each slot of `accesses` reads: its links first, then, once
    /// those are on their way, its neighbours'. One call for the batch, so the array is not
    /// retained for each slot. A hint: nothing changes.
    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>) {
        for access in accesses { prefetch(access.slot) }
        for access in accesses { prefetchNeighbours(of: access.slot) }
    }

    /// Forgets every link, keeping the array's storage.
    mutating func removeAll() {
        links.removeAll(keepingCapacity: true)
    }
}
