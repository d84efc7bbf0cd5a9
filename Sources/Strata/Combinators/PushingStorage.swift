/// A storage whose writes also go to a second storage, which is never read.
///
/// Created by ``WritableStorage/pushing(to:)``. A write goes to the back first, then to the front;
/// reads (when the front can be read) come from the front alone. Writes of one key reach both
/// layers in the order they began: a write waits for the earlier writes of its own key, never for
/// another key's, and a write that is still waiting can be cancelled. Reads never wait. Any task
/// may use it.
///
/// ```swift
/// let audited = cache.pushing(to: auditLog.writeOnly())
/// ```
public struct PushingStorage<Front: WritableStorage, Back: WritableStorage>: WritableStorage
where Front.Key == Back.Key, Front.Value == Back.Value, Front.Key: Hashable {
    /// The type that names a value.
    public typealias Key = Front.Key
    /// The type of the values.
    public typealias Value = Front.Value

    /// The layer written and, if readable, read.
    public let front: Front
    /// The layer every write is pushed to.
    public let back: Back
    @usableFromInline let turns: KeyedTurns<Key>

    @inlinable
    init(front: Front, back: Back) {
        self.front = front
        self.back = back
        self.turns = KeyedTurns()
    }

    /// Stores `value` in the back, then in the front. Concurrent writes to one key reach both
    /// layers in the same order.
    ///
    /// - Throws: the layers' errors (a failed back write leaves the front as it was), or
    ///   `StorageError.Code.cancelled` when the task is cancelled while an earlier write of `key`
    ///   is still running.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await turns.run(key, storage: "PushingStorage") { () throws(StorageError) in
            try await back.set(value, forKey: key)
            try await front.set(value, forKey: key)
        }
    }

    /// Removes the value from the back, then from the front, in turn with the other writes of
    /// `key` as ``set(_:forKey:)`` says.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await turns.run(key, storage: "PushingStorage") { () throws(StorageError) in
            try await back.removeValue(forKey: key)
            try await front.removeValue(forKey: key)
        }
    }
}

extension PushingStorage: ReadableStorage where Front: ReadableStorage {
    /// Returns the front's value; the back is never read.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        switch try front.immediateValue(forKey: key) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await front.value(forKey: key)
        }
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try front.immediateValue(forKey: key)
    }
}

extension PushingStorage: Storage where Front: Storage {}

extension WritableStorage where Key: Hashable {
    /// Returns a storage whose writes also go to `back`; reads come from this storage alone.
    @inlinable
    public func pushing<Back: WritableStorage<Key, Value>>(to back: Back) -> PushingStorage<Self, Back> {
        PushingStorage(front: self, back: back)
    }
}
