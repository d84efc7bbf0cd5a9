/// Two storages with the same keys, read and written as pairs.
///
/// Created by ``zip(_:_:)``. A read returns a pair only when both storages hold a value for the
/// key, and `nil` otherwise; a write writes both (first, then second). Any task may use it.
public struct ZippedStorage<First: KeyValueStorage, Second: KeyValueStorage>: KeyValueStorage
where First.Key == Second.Key {
    /// The type that names a value.
    public typealias Key = First.Key
    /// The type of the values.
    public typealias Value = (First.Value, Second.Value)

    /// The storage that holds the first element of each pair.
    public let first: First
    /// The storage that holds the second element of each pair.
    public let second: Second

    @inlinable
    init(first: First, second: Second) {
        self.first = first
        self.second = second
    }
}

extension ZippedStorage: ReadableStorage where First: ReadableStorage, Second: ReadableStorage {
    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let a: First.Value?
        switch try first.immediateValue(forKey: key) {
        case .found(let value): a = value
        case .absent: return nil
        case .unavailable: a = try await first.value(forKey: key)
        }
        guard let a else { return nil }
        let b: Second.Value?
        switch try second.immediateValue(forKey: key) {
        case .found(let value): b = value
        case .absent: return nil
        case .unavailable: b = try await second.value(forKey: key)
        }
        guard let b else { return nil }
        return (a, b)
    }
}

extension ZippedStorage: WritableStorage where First: WritableStorage, Second: WritableStorage {
    /// Stores `value` for `key`.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await first.set(value.0, forKey: key)
        try await second.set(value.1, forKey: key)
    }

    /// Removes the value for `key`, if any.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await first.removeValue(forKey: key)
        try await second.removeValue(forKey: key)
    }
}

extension ZippedStorage: Storage where First: Storage, Second: Storage {}

/// Returns a storage of pairs whose first elements live in `first` and second in `second`.
///
/// ```swift
/// let zipped = zip(names, ages)   // Storage<String, (String, Int)>
/// try await zipped.set(("Ada", 36), forKey: "ada")
/// ```
@inlinable
public func zip<First: KeyValueStorage, Second: KeyValueStorage>(
    _ first: First,
    _ second: Second
) -> ZippedStorage<First, Second> {
    ZippedStorage(first: first, second: second)
}
