/// A storage that reads a default value where its base has none.
///
/// Created by ``ReadableStorage/defaulting(to:)``. Only absence is replaced: a read that fails
/// (a value that does not decode, an I/O error) still throws, so an update can never overwrite
/// a damaged value with the default. Any task may use it.
public struct DefaultingStorage<Base: ReadableStorage>: ReadableStorage {
    /// The type that names a value.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage being read.
    public let base: Base
    /// The value read where the base has none.
    public let defaultValue: Value

    @inlinable
    init(base: Base, defaultValue: Value) {
        self.base = base
        self.defaultValue = defaultValue
    }

    /// Returns the value for `key`, or ``defaultValue`` when there is none; never `nil`.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        switch try base.immediateValue(forKey: key) {
        case .found(let value): return value
        case .absent: return defaultValue
        case .unavailable: return try await base.value(forKey: key) ?? defaultValue
        }
    }

    /// Answers as the base does, with ``defaultValue`` for absence.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        switch try base.immediateValue(forKey: key) {
        case .found(let value): .found(value)
        case .absent: .found(defaultValue)
        case .unavailable: .unavailable
        }
    }
}

extension DefaultingStorage: WritableStorage where Base: WritableStorage {
    /// Stores `value` for `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(value, forKey: key)
    }

    /// Removes the value for `key`, if any.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }
}

extension DefaultingStorage: Storage where Base: Storage {}

extension DefaultingStorage: UpdatableStorage where Base: UpdatableStorage {
    /// Reads the value for `key`, lets `body` change it and writes it back atomically; setting it
    /// to `nil` removes it.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key) { (value: inout Value?) throws -> Result in
            var current: Value? = value ?? defaultValue
            let result = try body(&current)
            value = current
            return result
        }
    }

    /// Changes the value for `key` atomically, starting from ``defaultValue`` when there is none.
    ///
    /// ```swift
    /// try await lists.defaulting(to: []).update(forKey: "first") { $0.append(10) }
    /// ```
    @inlinable
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key) { (value: inout Value?) throws -> Result in
            var current = value ?? defaultValue
            let result = try body(&current)
            value = current
            return result
        }
    }
}

extension ReadableStorage {
    /// Returns a storage that reads `defaultValue` where this one has no value.
    @inlinable
    public func defaulting(to defaultValue: Value) -> DefaultingStorage<Self> {
        DefaultingStorage(base: self, defaultValue: defaultValue)
    }
}

extension DefaultingStorage: LifetimeStorage where Base: LifetimeStorage {
    /// Stores `value` for `key`, expiring after `timeToLive` (the base's default when `nil`);
    /// once it expires, ``defaultValue`` is read again.
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await base.set(value, forKey: key, timeToLive: timeToLive)
    }

    /// How long the base's value for `key` has left, or `nil` when the base has none (and
    /// ``defaultValue`` is read): the lifetime of what is stored, not of the default.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await base.lifetime(forKey: key)
    }

    /// Changes the value for `key` atomically, starting from ``defaultValue`` when there is none,
    /// and gives the result `lifetime`; see `update(forKey:lifetime:_:)`.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key, lifetime: lifetime) { (value: inout Value?) throws -> Result in
            var current: Value? = value ?? defaultValue
            let result = try body(&current)
            value = current
            return result
        }
    }

    /// The base's value for `key` and how long it has left, or `nil` when the base has none.
    @inlinable
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        try await base.valueWithLifetime(forKey: key)
    }
}

extension DefaultingStorage: ExpiringStorage where Base: ExpiringStorage {
    /// Removes the base's expired values and returns how many there were.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        try await base.removeExpired()
    }
}
