/// A read the eviction policy has not been told about yet: the slot read, or -1 for a miss, and
/// the hash of its key.
@usableFromInline
struct PendingAccess {
    @usableFromInline var slot: Int
    @usableFromInline var hash: Int

    @inlinable
    init(slot: Int, hash: Int) {
        self.slot = slot
        self.hash = hash
    }
}

/// One shard of a ``ShardedMemoryCache``: the entries whose keys hash to it, the reads of them
/// the eviction policy has not seen yet, and its hit and miss counts. A pure value; the cache
/// keeps each shard behind a lock of its own.
@usableFromInline
struct MemoryShard<Key: Hashable, Value> {
    @usableFromInline
    struct Entry {
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        /// Seconds since the reference date after which the entry reads as absent; `.infinity`
        /// for never.
        @usableFromInline var expiry: Double
        /// Changes on every write, so `update` can tell whether the entry moved under it.
        @usableFromInline var version: UInt64
        /// Where the eviction policy knows the entry by.
        @usableFromInline var slot: Int

        @inlinable
        init(value: Value, cost: Int, expiry: Double, version: UInt64, slot: Int) {
            self.value = value
            self.cost = cost
            self.expiry = expiry
            self.version = version
            self.slot = slot
        }
    }

    /// What ``record(_:)`` asks of its caller.
    @usableFromInline typealias Recorded = RecordedRead

    @usableFromInline var entries: [HashedKey<Key>: Entry] = [:]
    @usableFromInline var pending: [PendingAccess] = []
    @usableFromInline var hits: UInt64 = 0
    @usableFromInline var misses: UInt64 = 0
    @usableFromInline var writes: UInt64 = 0
    /// The version the next write in this shard takes. Versions need only differ per key, and a
    /// key's writes all happen in its shard.
    @usableFromInline var nextVersion: UInt64 = 1

    @usableFromInline
    init() {}

    /// A version no entry of this shard has had.
    @inlinable
    mutating func takeVersion() -> UInt64 {
        defer { nextVersion &+= 1 }
        return nextVersion
    }

    /// Moves the expiry of `key`'s entry, which a read found alive: not a write, so its version
    /// stays.
    @inlinable
    mutating func renew(_ key: HashedKey<Key>, expiry: Double) {
        guard let position = entries.index(forKey: key) else { return }
        entries.values[position].expiry = expiry
    }

    /// Buffers `access` for the policy, or drops it when the buffer is full.
    @inlinable @inline(__always)
    mutating func record(_ access: PendingAccess) -> Recorded {
        RecordedRead.record(access, in: &pending)
    }
}

/// What buffering a read for the eviction policy asks of the reader.
@usableFromInline
enum RecordedRead {
    /// Nothing more.
    case buffered
    /// The read is the first since the buffer was last drained: mark the buffer as pending.
    case first
    /// The buffer is full enough to drain, if the policy is free.
    case drainable

    /// Reads buffered before a reader offers to drain them.
    @usableFromInline static var drainThreshold: Int { 16 }
    /// Reads buffered at most. While another thread holds the policy, a read beyond this is not
    /// recorded (the entry is still returned): the policy loses a little information, and no reader
    /// ever waits for it, as in Caffeine's read buffers.
    @usableFromInline static var capacity: Int { 64 }

    /// Appends `access` to `pending`, or drops it when the buffer holds ``capacity`` reads
    /// already.
    @inlinable @inline(__always)
    static func record(_ access: PendingAccess, in pending: inout [PendingAccess]) -> RecordedRead {
        let count = pending.count
        guard count < capacity else { return .drainable }
        pending.append(access)
        if count == 0 { return .first }
        return count + 1 >= drainThreshold ? .drainable : .buffered
    }
}
