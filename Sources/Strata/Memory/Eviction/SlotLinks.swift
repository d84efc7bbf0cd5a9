/// Doubly linked lists of slot indices threaded through two shared index arrays, for eviction
/// queues that keep entries in several ordered regions. A slot is in at most one list at a time.
///
/// Linking and unlinking are O(1) and never allocate; the arrays grow only when a slot index is
/// seen for the first time.
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

    private var previous: [Int] = []
    private var next: [Int] = []

    /// The number of slot indices the arrays cover.
    var slotCount: Int { next.count }

    /// Makes room for `slot`.
    mutating func ensureCapacity(for slot: Int) {
        while next.count <= slot {
            previous.append(-1)
            next.append(-1)
        }
    }

    /// The slot pushed just before `slot` onto its list (towards the head), or -1.
    func newer(than slot: Int) -> Int {
        previous[slot]
    }

    /// Puts `slot`, which is in no list, at the head of `list`.
    mutating func pushHead(_ slot: Int, onto list: inout List) {
        previous[slot] = -1
        next[slot] = list.head
        if list.head >= 0 { previous[list.head] = slot }
        list.head = slot
        if list.tail < 0 { list.tail = slot }
        list.count += 1
    }

    /// Takes `slot` out of `list`, which holds it.
    mutating func unlink(_ slot: Int, from list: inout List) {
        let before = previous[slot]
        let after = next[slot]
        if before >= 0 { next[before] = after } else { list.head = after }
        if after >= 0 { previous[after] = before } else { list.tail = before }
        previous[slot] = -1
        next[slot] = -1
        list.count -= 1
    }

    /// Moves `slot`, which is in `list`, to its head.
    mutating func moveToHead(_ slot: Int, in list: inout List) {
        guard list.head != slot else { return }
        unlink(slot, from: &list)
        pushHead(slot, onto: &list)
    }

    /// Forgets every link, keeping the arrays' storage.
    mutating func removeAll() {
        previous.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
    }
}
