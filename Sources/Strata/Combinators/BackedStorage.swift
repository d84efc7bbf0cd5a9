/// A storage read from its front and, on a miss, from its back; written to the front only.
///
/// Created by ``ReadableStorage/backed(by:)``. When the front can be written, a back hit is pulled
/// forward into it, and the backfill never overwrites a value that a concurrent write through
/// this storage put in the front. The back is never written. Any task may use it.
///
/// ```swift
/// let bundled = MemoryStorage<String, String>().backed(by: defaults.readOnly()).readOnly()
/// ```
public struct BackedStorage<Front: ReadableStorage, Back: ReadableStorage>: ReadableStorage
where Front.Key == Back.Key, Front.Value == Back.Value, Front.Key: Hashable {
    /// The type that names a value.
    public typealias Key = Front.Key
    /// The type of the values.
    public typealias Value = Front.Value

    /// The layer read first and, if writable, filled from the back.
    public let front: Front
    /// The layer read on a front miss.
    public let back: Back
    @usableFromInline let gate: WriteGate
    @usableFromInline let pullForward: (@Sendable (Value, Key) async throws(StorageError) -> Void)?

    @inlinable
    init(front: Front, back: Back, pullForward: (@Sendable (Value, Key) async throws(StorageError) -> Void)?) {
        self.front = front
        self.back = back
        self.gate = WriteGate()
        self.pullForward = pullForward
    }

    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let stripe = gate.stripe(for: key)
        let generation = gate.snapshot(stripe)
        switch try front.immediateValue(forKey: key) {
        case .found(let value): return value
        case .absent: break
        case .unavailable:
            if let value = try await front.value(forKey: key) { return value }
        }
        guard let value = try await back.value(forKey: key) else { return nil }
        if let pullForward {
            // The read succeeded; a front that cannot take the value only costs a later miss.
            try? await gate.backfill(stripe, ifUnchangedSince: generation) { () throws(StorageError) in
                try await pullForward(value, key)
            }
        }
        return value
    }
}

extension BackedStorage: WritableStorage where Front: WritableStorage {
    /// Stores `value` in the front only.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await gate.write(gate.stripe(for: key)) { () throws(StorageError) in
            try await front.set(value, forKey: key)
        }
    }

    /// Removes the value from the front only; the back may still supply it on the next read.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await gate.write(gate.stripe(for: key)) { () throws(StorageError) in
            try await front.removeValue(forKey: key)
        }
    }
}

extension BackedStorage: Storage where Front: Storage {}

extension ReadableStorage where Key: Hashable {
    /// Returns a read-only storage that reads this storage first and `back` on a miss.
    @inlinable
    public func backed<Back: ReadableStorage<Key, Value>>(by back: Back) -> BackedStorage<Self, Back> {
        BackedStorage(front: self, back: back, pullForward: nil)
    }
}

extension Storage where Key: Hashable {
    /// Returns a storage that reads this storage first and `back` on a miss, keeping what it finds
    /// here; writes go to this storage only.
    @inlinable
    public func backed<Back: ReadableStorage<Key, Value>>(by back: Back) -> BackedStorage<Self, Back> {
        BackedStorage(front: self, back: back) { (value, key) throws(StorageError) in
            try await self.set(value, forKey: key)
        }
    }
}
