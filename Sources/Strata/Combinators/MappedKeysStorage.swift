/// A storage whose keys are converted to its base's keys on every call.
///
/// Created by ``KeyValueStorage/mapKeys(_:)``. It can read, write, update and clear whenever its
/// base can. Any task may use it.
public struct MappedKeysStorage<Base: KeyValueStorage, Key: Sendable>: KeyValueStorage {
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage that holds the values.
    public let base: Base
    @usableFromInline let transform: @Sendable (Key) throws -> Base.Key

    @inlinable
    init(base: Base, transform: @escaping @Sendable (Key) throws -> Base.Key) {
        self.base = base
        self.transform = transform
    }

    @inlinable
    func baseKey(for key: Key) throws(StorageError) -> Base.Key {
        do {
            return try transform(key)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .invalidKey,
                key: key,
                storage: "MappedKeysStorage",
                message: "the key could not be converted for the underlying storage"
            )
        }
    }
}

extension MappedKeysStorage: ReadableStorage where Base: ReadableStorage {
    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let baseKey = try baseKey(for: key)
        switch try base.immediateValue(forKey: baseKey) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await base.value(forKey: baseKey)
        }
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(forKey: baseKey(for: key))
    }

    /// Returns the values for `keys`, in the same order, read from the base in one call.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        var baseKeys: [Base.Key] = []
        baseKeys.reserveCapacity(keys.count)
        for key in keys { baseKeys.append(try baseKey(for: key)) }
        return try await base.values(forKeys: baseKeys)
    }
}

extension MappedKeysStorage: WritableStorage where Base: WritableStorage {
    /// Stores `value` for `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(value, forKey: baseKey(for: key))
    }

    /// Removes the value for `key`, if any.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: baseKey(for: key))
    }

    /// Stores every value in `entries`, in order, through one call to the base.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        var converted: [(key: Base.Key, value: Value)] = []
        converted.reserveCapacity(entries.count)
        for entry in entries { converted.append((try baseKey(for: entry.key), entry.value)) }
        try await base.setValues(converted)
    }
}

extension MappedKeysStorage: Storage where Base: Storage {}

extension MappedKeysStorage: UpdatableStorage where Base: UpdatableStorage {
    /// Reads the value for `key`, lets `body` change it and writes it back atomically; setting it
    /// to `nil` removes it.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: baseKey(for: key), body)
    }
}

extension MappedKeysStorage: LifetimeStorage where Base: LifetimeStorage {
    /// Stores `value` for `key`, expiring after `timeToLive` (the base's default when `nil`).
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await base.set(value, forKey: baseKey(for: key), timeToLive: timeToLive)
    }

    /// How long the value for `key` has left in the base.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await base.lifetime(forKey: baseKey(for: key))
    }

    /// Updates the value for `key` atomically in the base, giving it `lifetime`; see
    /// `update(forKey:lifetime:_:)`.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: baseKey(for: key), lifetime: lifetime, body)
    }

    /// The value for `key` and how long it has left, read together where the base can.
    @inlinable
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        try await base.valueWithLifetime(forKey: baseKey(for: key))
    }
}

extension MappedKeysStorage: ExpiringStorage where Base: ExpiringStorage {
    /// Removes the base's expired values and returns how many there were.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        try await base.removeExpired()
    }
}

extension MappedKeysStorage: ClearableStorage where Base: ClearableStorage {
    /// Removes every value.
    @inlinable
    public func removeAll() async throws(StorageError) {
        try await base.removeAll()
    }
}

extension KeyValueStorage {
    /// Returns a storage keyed by `NewKey`, whose keys `transform` turns into this storage's keys.
    ///
    /// When `transform` throws, the call fails with ``StorageError/Code/invalidKey``.
    ///
    /// ```swift
    /// let byID = files.mapKeys { (id: UUID) in id.uuidString }
    /// ```
    @inlinable
    public func mapKeys<NewKey>(
        _ transform: @escaping @Sendable (NewKey) throws -> Key
    ) -> MappedKeysStorage<Self, NewKey> {
        MappedKeysStorage(base: self, transform: transform)
    }

    /// Returns a storage keyed by a `RawRepresentable` type whose raw values are this storage's
    /// keys, such as a `String` enum.
    @inlinable
    public func mapKeys<NewKey: RawRepresentable & Sendable>(
        to type: NewKey.Type
    ) -> MappedKeysStorage<Self, NewKey> where NewKey.RawValue == Key {
        MappedKeysStorage(base: self) { $0.rawValue }
    }
}

extension KeyValueStorage where Key: LosslessStringConvertible {
    /// Returns a storage keyed by strings, converted to this storage's keys with
    /// `Key.init(_:)`; a string that does not convert fails with ``StorageError/Code/invalidKey``.
    @inlinable
    public func usingStringKeys() -> MappedKeysStorage<Self, String> {
        MappedKeysStorage(base: self) { string in
            guard let key = Key(string) else {
                throw StorageError(
                    .invalidKey,
                    key: string,
                    storage: "MappedKeysStorage",
                    message: "the string is not a valid \(Key.self)"
                )
            }
            return key
        }
    }
}
