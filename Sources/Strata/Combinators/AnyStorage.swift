/// A storage with its type erased: a chain kept in a property, or a stand-in in a test, without
/// writing out the chain's nested type.
///
/// ```swift
/// final class Settings {
///     let values: AnyStorage<String, Data>
///
///     init(folder: URL) throws {
///         values = AnyStorage(MemoryStorage<String, Data>().combined(with: try DiskStorage(url: folder)))
///     }
/// }
/// ```
///
/// Every call goes to the wrapped storage, batches included; what it cannot keep of the
/// chain's type is the storage's own API beyond ``Storage`` (keep ``AnyUpdatableStorage`` for
/// `update`). Any task may use it.
public struct AnyStorage<Key: Sendable, Value: Sendable>: Storage {
    @usableFromInline let base: any Storage<Key, Value>
    /// `base`'s synchronous lookup, made where its type is known, so that a read runs the
    /// chain's specialized code rather than its generic code through the existential.
    @usableFromInline let lookUp: @Sendable (Key) throws(StorageError) -> ImmediateLookup<Value>

    /// Wraps `base`, hiding its type; an `AnyStorage` is not wrapped twice.
    @inlinable
    public init(_ base: some Storage<Key, Value>) {
        if let erased = base as? AnyStorage<Key, Value> {
            self = erased
        } else {
            self.base = base
            self.lookUp = { (key) throws(StorageError) in try base.immediateValue(forKey: key) }
        }
    }

    /// Returns the wrapped storage's value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        // A storage that can answer at once (memory, and chains over it) answers through
        // `lookUp`, the chain's specialized code; only the rest pays the existential's async call.
        switch try lookUp(key) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await base.value(forKey: key)
        }
    }

    /// Asks the wrapped storage for an answer without suspending.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try lookUp(key)
    }

    /// Returns the wrapped storage's values for `keys`, in one call to it.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        try await base.values(forKeys: keys)
    }

    /// Stores `value` for `key` in the wrapped storage.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(value, forKey: key)
    }

    /// Removes the value for `key` from the wrapped storage.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }

    /// Stores `entries` in the wrapped storage, in one call to it.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        try await base.setValues(entries)
    }
}

/// A storage that updates atomically, with its type erased: ``AnyStorage`` that keeps
/// `update(forKey:_:)` and what is built on it.
///
/// Any task may use it.
public struct AnyUpdatableStorage<Key: Sendable, Value: Sendable>: UpdatableStorage {
    @usableFromInline let base: any UpdatableStorage<Key, Value>
    /// `base`'s synchronous lookup, made where its type is known, so that a read runs the
    /// chain's specialized code rather than its generic code through the existential.
    @usableFromInline let lookUp: @Sendable (Key) throws(StorageError) -> ImmediateLookup<Value>

    /// Wraps `base`, hiding its type; an `AnyUpdatableStorage` is not wrapped twice.
    @inlinable
    public init(_ base: some UpdatableStorage<Key, Value>) {
        if let erased = base as? AnyUpdatableStorage<Key, Value> {
            self = erased
        } else {
            self.base = base
            self.lookUp = { (key) throws(StorageError) in try base.immediateValue(forKey: key) }
        }
    }

    /// Returns the wrapped storage's value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        // A storage that can answer at once (memory, and chains over it) answers through
        // `lookUp`, the chain's specialized code; only the rest pays the existential's async call.
        switch try lookUp(key) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await base.value(forKey: key)
        }
    }

    /// Asks the wrapped storage for an answer without suspending.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try lookUp(key)
    }

    /// Returns the wrapped storage's values for `keys`, in one call to it.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        try await base.values(forKeys: keys)
    }

    /// Stores `value` for `key` in the wrapped storage.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(value, forKey: key)
    }

    /// Removes the value for `key` from the wrapped storage.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }

    /// Stores `entries` in the wrapped storage, in one call to it.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        try await base.setValues(entries)
    }

    /// Updates the value for `key` atomically in the wrapped storage.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key, body)
    }
}

extension Storage {
    /// Erases the storage's type: `AnyStorage(self)`.
    public func eraseToAnyStorage() -> AnyStorage<Key, Value> {
        AnyStorage(self)
    }
}

extension UpdatableStorage {
    /// Erases the storage's type, keeping `update`: `AnyUpdatableStorage(self)`.
    public func eraseToAnyUpdatableStorage() -> AnyUpdatableStorage<Key, Value> {
        AnyUpdatableStorage(self)
    }
}
