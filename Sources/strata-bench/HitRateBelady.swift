/// Belady's offline optimum: the most hits any cache of `capacity` entries could score on `keys`,
/// knowing the future.
///
/// On a miss the key is admitted only if it will be requested again before some resident key, and
/// then that resident key with the farthest next use is evicted (a cache may decline to keep a key,
/// so this bound holds for every policy, admission filters included). O(n log n): next uses are
/// precomputed in one backward pass, and residents are kept in a max-heap by next use.
func beladyHits(_ keys: [Int], capacity: Int) -> Int {
    let never = Int.max
    var nextUse = [Int](repeating: never, count: keys.count)
    var seen: [Int: Int] = [:]
    seen.reserveCapacity(keys.count / 4)
    for index in keys.indices.reversed() {
        nextUse[index] = seen.updateValue(index, forKey: keys[index]) ?? never
    }
    seen = [:]

    // Resident keys and their next use; the heap may hold stale entries, skipped when seen.
    var residents: [Int: Int] = [:]
    residents.reserveCapacity(capacity)
    var heap = FarthestFirstHeap()
    var hits = 0
    for (index, key) in keys.enumerated() {
        let next = nextUse[index]
        if residents[key] != nil {
            hits += 1
            residents[key] = next
            heap.push(next: next, key: key)
            continue
        }
        if residents.count < capacity {
            residents[key] = next
            heap.push(next: next, key: key)
            continue
        }
        // Drop stale entries to find the resident used farthest in the future.
        while let top = heap.top, residents[top.key] != top.next {
            heap.pop()
        }
        guard let farthest = heap.top, next < farthest.next else { continue }
        heap.pop()
        residents[farthest.key] = nil
        residents[key] = next
        heap.push(next: next, key: key)
        if heap.count > 4 * capacity + 1024 {
            heap.rebuild(from: residents)
        }
    }
    return hits
}

/// A binary max-heap of (next use, key) pairs.
private struct FarthestFirstHeap {
    private var entries: [(next: Int, key: Int)] = []

    var count: Int { entries.count }

    var top: (next: Int, key: Int)? { entries.first }

    mutating func push(next: Int, key: Int) {
        entries.append((next, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[parent].next < entries[child].next else { break }
            entries.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() {
        guard entries.count > 1 else {
            entries.removeAll(keepingCapacity: true)
            return
        }
        entries[0] = entries.removeLast()
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var largest = left
            if left + 1 < entries.count, entries[left + 1].next > entries[left].next {
                largest = left + 1
            }
            guard entries[largest].next > entries[parent].next else { return }
            entries.swapAt(parent, largest)
            parent = largest
        }
    }

    /// Replaces the entries with exactly the residents', dropping every stale one.
    mutating func rebuild(from residents: [Int: Int]) {
        entries.removeAll(keepingCapacity: true)
        for (key, next) in residents {
            entries.append((next, key))
        }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: index)
        }
    }
}
