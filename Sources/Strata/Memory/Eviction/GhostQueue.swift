/// A bounded FIFO of key hashes recently evicted, with O(1) membership: the ghost queue of
/// S3-FIFO.
///
/// A ring buffer keeps the insertion order and an open-addressing table (linear probing,
/// backward-shift deletion) maps each hash to its latest position in the ring. Fixed-size: nothing
/// allocates after creation.
struct GhostQueue {
    /// Hashes in insertion order; position `time % capacity` holds the hash inserted at `time`.
    private var ring: [UInt64]
    private var keys: [UInt64]
    /// The ring time of each table entry's latest insertion, or -1 for an empty bucket.
    private var times: [Int]
    private let mask: Int
    private var time = 0
    /// The most hashes remembered.
    let capacity: Int

    /// The bytes of the ring and the table.
    var byteCount: Int {
        (ring.capacity + keys.capacity) * MemoryLayout<UInt64>.stride + times.capacity * MemoryLayout<Int>.stride
    }

    /// Creates a queue that remembers the last `capacity` hashes.
    init(capacity: Int) {
        self.capacity = max(capacity, 0)
        ring = Array(repeating: 0, count: self.capacity)
        var buckets = 4
        while buckets < self.capacity * 2 { buckets <<= 1 }
        keys = Array(repeating: 0, count: buckets)
        times = Array(repeating: -1, count: buckets)
        mask = buckets - 1
    }

    @inline(__always)
    private func home(of key: UInt64) -> Int {
        Int(truncatingIfNeeded: key >> 32) & mask
    }

    private func bucket(of key: UInt64) -> Int? {
        var index = home(of: key)
        while times[index] >= 0 {
            if keys[index] == key { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Remembers `key`, forgetting the oldest hash when full.
    mutating func insert(_ key: UInt64) {
        guard capacity > 0 else { return }
        let position = time % capacity
        if time >= capacity {
            let old = ring[position]
            if let index = bucket(of: old), times[index] == time - capacity {
                delete(at: index)
            }
        }
        ring[position] = key
        if let index = bucket(of: key) {
            times[index] = time
        } else {
            var index = home(of: key)
            while times[index] >= 0 { index = (index + 1) & mask }
            keys[index] = key
            times[index] = time
        }
        time += 1
    }

    /// Forgets `key` and returns whether it was remembered.
    mutating func remove(_ key: UInt64) -> Bool {
        guard let index = bucket(of: key) else { return false }
        delete(at: index)
        return true
    }

    /// Empties a bucket, shifting later entries of its probe run back so every entry stays
    /// reachable from its home bucket.
    private mutating func delete(at index: Int) {
        var hole = index
        var next = (index + 1) & mask
        while times[next] >= 0 {
            let home = home(of: keys[next])
            // Move the entry into the hole unless its home lies cyclically in (hole, next].
            let distanceToNext = (next - home) & mask
            let distanceToHole = (next - hole) & mask
            if distanceToNext >= distanceToHole {
                keys[hole] = keys[next]
                times[hole] = times[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        times[hole] = -1
    }

    /// Forgets every hash.
    mutating func removeAll() {
        for index in times.indices { times[index] = -1 }
        time = 0
    }
}
