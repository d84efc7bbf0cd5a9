/// A storage whose values are converted on the way in and out of its base.
///
/// Created by ``Storage/mapValues(reading:writing:)``, by the codecs (``Storage/json(_:encoder:decoder:)``
/// and others) and, one way only, by ``ReadableStorage/mapValues(_:)`` and ``WriteOnlyStorage/mapValues(_:)``. A conversion that throws
/// fails the call with ``StorageError/Code/decodingFailed`` when reading and
/// ``StorageError/Code/encodingFailed`` when writing; the stored value is left as it was.
/// Any task may use it.
public struct MappedValuesStorage<Base: KeyValueStorage, Value: Sendable>: KeyValueStorage {
    /// The type that names a value.
    public typealias Key = Base.Key

    /// The storage that holds the values.
    public let base: Base
    @usableFromInline let read: @Sendable (Base.Value) throws -> Value
    @usableFromInline let write: @Sendable (Value) throws -> Base.Value

    @inlinable
    init(
        base: Base,
        read: @escaping @Sendable (Base.Value) throws -> Value,
        write: @escaping @Sendable (Value) throws -> Base.Value
    ) {
        self.base = base
        self.read = read
        self.write = write
    }

    @inlinable
    func decode(_ stored: Base.Value, key: Key) throws(StorageError) -> Value {
        do {
            return try read(stored)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .decodingFailed,
                key: key,
                storage: "MappedValuesStorage",
                message: "the stored value could not be converted to \(Value.self)"
            ).carryingUndecodedBytes(of: stored)
        }
    }

    @inlinable
    func encode(_ value: Value, key: Key) throws(StorageError) -> Base.Value {
        do {
            return try write(value)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .encodingFailed,
                key: key,
                storage: "MappedValuesStorage",
                message: "the value could not be converted to \(Base.Value.self) for storing"
            )
        }
    }
}

extension MappedValuesStorage: ReadableStorage where Base: ReadableStorage {
    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let stored: Base.Value?
        switch try base.immediateValue(forKey: key) {
        case .found(let value): stored = value
        case .absent: return nil
        case .unavailable: stored = try await base.value(forKey: key)
        }
        guard let stored else { return nil }
        return try decode(stored, key: key)
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(forKey: key).map { (stored) throws(StorageError) in try decode(stored, key: key) }
    }

    /// Returns the values for `keys`, in the same order, read from the base in one call.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        let stored = try await base.values(forKeys: keys)
        var values: [Value?] = []
        values.reserveCapacity(stored.count)
        for (key, stored) in zip(keys, stored) {
            values.append(try stored.map { (stored) throws(StorageError) in try decode(stored, key: key) })
        }
        return values
    }
}

extension MappedValuesStorage: WritableStorage where Base: WritableStorage {
    /// Stores `value` for `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(encode(value, key: key), forKey: key)
    }

    /// Removes the value for `key`, if any.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }

    /// Stores every value in `entries`, in order, through one call to the base; a value that
    /// does not convert fails the call before anything is written.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        var converted: [(key: Key, value: Base.Value)] = []
        converted.reserveCapacity(entries.count)
        for entry in entries { converted.append((entry.key, try encode(entry.value, key: entry.key))) }
        try await base.setValues(converted)
    }
}

extension MappedValuesStorage: Storage where Base: Storage {}

extension MappedValuesStorage: UpdatableStorage where Base: UpdatableStorage {
    /// Reads the value for `key`, lets `body` change it and writes it back atomically; setting it
    /// to `nil` removes it.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key) { (stored: inout Base.Value?) throws -> Result in
            var value = try stored.map { (stored) throws(StorageError) in try decode(stored, key: key) }
            let result = try body(&value)
            stored = try value.map { (value) throws(StorageError) in try encode(value, key: key) }
            return result
        }
    }
}

extension MappedValuesStorage: LifetimeStorage where Base: LifetimeStorage {
    /// Stores `value` for `key`, converted, expiring after `timeToLive` (the base's default when
    /// `nil`).
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await base.set(encode(value, key: key), forKey: key, timeToLive: timeToLive)
    }

    /// How long the value for `key` has left in the base.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await base.lifetime(forKey: key)
    }

    /// Updates the value for `key` atomically in the base, converting it both ways, and gives it
    /// `lifetime`; see `update(forKey:lifetime:_:)`.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await base.update(forKey: key, lifetime: lifetime) { (stored: inout Base.Value?) throws -> Result in
            var value = try stored.map { (stored) throws(StorageError) in try decode(stored, key: key) }
            let result = try body(&value)
            stored = try value.map { (value) throws(StorageError) in try encode(value, key: key) }
            return result
        }
    }

    /// The value for `key`, converted, and how long it has left, read together where the base
    /// can.
    @inlinable
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        guard let (stored, lifetime) = try await base.valueWithLifetime(forKey: key) else { return nil }
        return (try decode(stored, key: key), lifetime)
    }
}

extension MappedValuesStorage: ExpiringStorage where Base: ExpiringStorage {
    /// Removes the base's expired values and returns how many there were.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        try await base.removeExpired()
    }
}

extension MappedValuesStorage: EnumerableStorage where Base: EnumerableStorage {
    /// Every key with a value, in no particular order.
    @inlinable
    public func keys() async throws(StorageError) -> [Key] {
        try await base.keys()
    }
}

extension MappedValuesStorage: ClearableStorage where Base: ClearableStorage {
    /// Removes every value.
    @inlinable
    public func removeAll() async throws(StorageError) {
        try await base.removeAll()
    }
}

extension Storage {
    /// Returns a storage of `NewValue`s: `reading` converts each stored value on the way out and
    /// `writing` converts each new value on the way in. Either may throw.
    ///
    /// ```swift
    /// let images = files.mapValues(reading: { try Image(png: $0) }, writing: { try $0.pngData() })
    /// ```
    @inlinable
    public func mapValues<NewValue>(
        reading: @escaping @Sendable (Value) throws -> NewValue,
        writing: @escaping @Sendable (NewValue) throws -> Value
    ) -> MappedValuesStorage<Self, NewValue> {
        MappedValuesStorage(base: self, read: reading, write: writing)
    }
}

extension ReadableStorage {
    /// Returns a read-only storage whose values are this storage's values converted by
    /// `transform`, which may throw.
    @inlinable
    public func mapValues<NewValue>(
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> MappedValuesStorage<ReadOnlyStorage<Self>, NewValue> {
        MappedValuesStorage(base: readOnly(), read: transform) { _ in
            throw StorageError(.unsupported, storage: "MappedValuesStorage", message: "the storage is read-only")
        }
    }
}

extension WriteOnlyStorage {
    /// Returns a write-only storage that converts each new value with `transform`, which may
    /// throw, before writing it here.
    ///
    /// It lives on write-only views so that `mapValues { … }` on a read-write storage is never
    /// ambiguous: `storage.writeOnly().mapValues { (number: Int) in String(number) }`.
    @inlinable
    public func mapValues<NewValue>(
        _ transform: @escaping @Sendable (NewValue) throws -> Value
    ) -> MappedValuesStorage<Self, NewValue> {
        MappedValuesStorage(
            base: self,
            read: { _ in
                throw StorageError(.unsupported, storage: "MappedValuesStorage", message: "the storage is write-only")
            },
            write: transform
        )
    }
}
