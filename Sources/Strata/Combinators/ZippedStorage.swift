/// Two storages with the same keys, read and written as pairs.
///
/// Created by ``zip(_:_:)``. A read returns a pair only when both storages hold a value for the
/// key, and `nil` otherwise. A write (or removal) is tried on both, first then second, whichever
/// fails: when one fails, the other still holds its new element (or has lost its old one), the
/// failing side keeps what it held, and the first failure is thrown, so a read of the key then
/// returns `nil` or a pair with the failing side's old element, and retrying the write repairs
/// it. Any task may use it.
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
    /// Stores `value` for `key` in both storages (see the type's discussion of a side that fails).
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await both { () throws(StorageError) in
            try await first.set(value.0, forKey: key)
        } and: { () throws(StorageError) in
            try await second.set(value.1, forKey: key)
        }
    }

    /// Removes the value for `key`, if any, from both storages (see the type's discussion of a
    /// side that fails).
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await both { () throws(StorageError) in
            try await first.removeValue(forKey: key)
        } and: { () throws(StorageError) in
            try await second.removeValue(forKey: key)
        }
    }

    /// Runs both writes whatever the first one does; throws the first failure.
    @inlinable
    func both(
        _ firstWrite: () async throws(StorageError) -> Void,
        and secondWrite: () async throws(StorageError) -> Void
    ) async throws(StorageError) {
        var failure: StorageError?
        do throws(StorageError) {
            try await firstWrite()
        } catch {
            failure = error
        }
        do throws(StorageError) {
            try await secondWrite()
        } catch {
            failure = failure ?? error
        }
        if let failure { throw failure }
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
