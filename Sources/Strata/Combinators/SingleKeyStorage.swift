/// A storage of one value, kept in its base under a fixed key.
///
/// Created by ``KeyValueStorage/singleKey(_:)``. Its key type is `Void`; use ``value()``,
/// ``set(_:)`` and ``removeValue()``. Any task may use it.
///
/// ```swift
/// let settings = files.json(Settings.self).singleKey("settings")
/// try await settings.set(Settings(theme: .dark))
/// ```
public struct SingleKeyStorage<Base: KeyValueStorage>: KeyValueStorage {
    /// The type that names a value.
    public typealias Key = Void
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage that holds the value.
    public let base: Base
    /// The key the value is kept under in ``base``.
    public let key: Base.Key

    @inlinable
    init(base: Base, key: Base.Key) {
        self.base = base
        self.key = key
    }
}

extension SingleKeyStorage: ReadableStorage where Base: ReadableStorage {
    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Void) async throws(StorageError) -> Value? {
        switch try base.immediateValue(forKey: self.key) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await base.value(forKey: self.key)
        }
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Void) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(forKey: self.key)
    }

    /// Returns the value, or `nil` if there is none.
    @inlinable
    public func value() async throws(StorageError) -> Value? {
        try await base.value(forKey: key)
    }
}

extension SingleKeyStorage: WritableStorage where Base: WritableStorage {
    /// Stores `value` for `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Void) async throws(StorageError) {
        try await base.set(value, forKey: self.key)
    }

    /// Removes the value for `key`, if any.
    @inlinable
    public func removeValue(forKey key: Void) async throws(StorageError) {
        try await base.removeValue(forKey: self.key)
    }

    /// Stores `value`, replacing the one there.
    @inlinable
    public func set(_ value: Value) async throws(StorageError) {
        try await base.set(value, forKey: key)
    }

    /// Removes the value.
    @inlinable
    public func removeValue() async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }
}

extension SingleKeyStorage: Storage where Base: Storage {}

extension SingleKeyStorage: UpdatableStorage where Base: UpdatableStorage {
    /// Reads the value for `key`, lets `body` change it and writes it back atomically; setting it
    /// to `nil` removes it.
    @inlinable
    public func update<Result>(
        forKey key: Void,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: self.key, body)
    }

    /// Changes the value atomically; see ``UpdatableStorage/update(forKey:_:)``.
    @inlinable
    @discardableResult
    public func update<Result>(_ body: (inout Value?) throws -> Result) async throws(StorageError) -> Result {
        try await base.update(forKey: key, body)
    }
}

extension KeyValueStorage {
    /// Returns a storage of the single value kept here under `key`.
    @inlinable
    public func singleKey(_ key: Key) -> SingleKeyStorage<Self> {
        SingleKeyStorage(base: self, key: key)
    }
}

extension SingleKeyStorage: LifetimeStorage where Base: LifetimeStorage {
    /// Stores `value` under the base's key, expiring after `timeToLive` (the base's default when
    /// `nil`).
    @inlinable
    public func set(_ value: Value, forKey key: Void, timeToLive: Duration?) async throws(StorageError) {
        try await base.set(value, forKey: self.key, timeToLive: timeToLive)
    }

    /// How long the value has left in the base.
    @inlinable
    public func lifetime(forKey key: Void) async throws(StorageError) -> Lifetime? {
        try await base.lifetime(forKey: self.key)
    }

    /// Updates the value atomically in the base, giving it `lifetime`; see
    /// `update(forKey:lifetime:_:)`.
    @inlinable
    public func update<Result>(
        forKey key: Void,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: self.key, lifetime: lifetime, body)
    }

    /// The value and how long it has left, read together where the base can.
    @inlinable
    public func valueWithLifetime(forKey key: Void) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        try await base.valueWithLifetime(forKey: self.key)
    }
}

extension SingleKeyStorage: ExpiringStorage where Base: ExpiringStorage {
    /// Removes the base's expired values, every key's, and returns how many there were.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        try await base.removeExpired()
    }
}
