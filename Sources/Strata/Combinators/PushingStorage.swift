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

extension PushingStorage: UpdatableStorage where Front: UpdatableStorage {
    /// Reads the front's value for `key`, lets `body` change it, then writes the result to the
    /// back and then the front (setting it to `nil` removes it from both), in turn with the other
    /// writes of `key` as ``set(_:forKey:)`` says: atomic against every write made through this
    /// storage, and `body` runs once. A failed back write leaves the front as it was.
    ///
    /// - Throws: `StorageError.Code.updateAborted` when `body` throws (nothing is written), the
    ///   layers' errors, or `StorageError.Code.cancelled` as ``set(_:forKey:)`` does.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await turns.run(key, storage: "PushingStorage") { () throws(StorageError) -> Result in
            let (written, result) = try await changed(key, body)
            if let written {
                try await back.set(written, forKey: key)
            } else {
                try await back.removeValue(forKey: key)
            }
            try await front.update(forKey: key) { $0 = written }
            return result
        }
    }

    /// The front's value for `key` as `body` leaves it, and what `body` returned.
    @inlinable
    func changed<Result>(
        _ key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> (Value?, Result) {
        var value = try await front.value(forKey: key)
        do {
            let result = try body(&value)
            return (value, result)
        } catch {
            throw StorageError.updateAborted(by: error, key: key, storage: "PushingStorage")
        }
    }
}

extension PushingStorage: LifetimeStorage where Front: LifetimeStorage, Back: LifetimeStorage {
    /// Stores `value` in the back, then in the front, each expiring after `timeToLive` (its own
    /// default when `nil`), in turn with the other writes of `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await turns.run(key, storage: "PushingStorage") { () throws(StorageError) in
            try await back.set(value, forKey: key, timeToLive: timeToLive)
            try await front.set(value, forKey: key, timeToLive: timeToLive)
        }
    }

    /// How long the front's value for `key` has left; the back is never read.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await front.lifetime(forKey: key)
    }

    /// Updates `key` as ``update(forKey:_:)`` does, giving the result `lifetime` in both layers;
    /// with `nil`, each layer keeps the lifetime of a value it replaces and gives a new one its
    /// default.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await turns.run(key, storage: "PushingStorage") { () throws(StorageError) -> Result in
            let (written, result) = try await changed(key, body)
            try await back.update(forKey: key, lifetime: lifetime) { $0 = written }
            try await front.update(forKey: key, lifetime: lifetime) { $0 = written }
            return result
        }
    }

    /// The front's value for `key` and how long it has left.
    @inlinable
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        try await front.valueWithLifetime(forKey: key)
    }
}

extension PushingStorage: ExpiringStorage where Front: ExpiringStorage, Back: ExpiringStorage {
    /// Removes the expired values of the back, then of the front; returns how many the front had.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        _ = try await back.removeExpired()
        return try await front.removeExpired()
    }
}

extension WritableStorage where Key: Hashable {
    /// Returns a storage whose writes also go to `back`; reads come from this storage alone.
    @inlinable
    public func pushing<Back: WritableStorage<Key, Value>>(to back: Back) -> PushingStorage<Self, Back> {
        PushingStorage(front: self, back: back)
    }
}
