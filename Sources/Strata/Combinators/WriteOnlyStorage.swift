/// A view of a storage that can only be written.
///
/// Created by ``WritableStorage/writeOnly()``; it composes with ``WritableStorage/pushing(to:)``.
/// Any task may use it.
public struct WriteOnlyStorage<Base: WritableStorage>: WritableStorage {
    /// The type that names a value.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage being written.
    public let base: Base

    @inlinable
    init(base: Base) {
        self.base = base
    }

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

extension WriteOnlyStorage: ClearableStorage where Base: ClearableStorage {
    /// Removes every value.
    @inlinable
    public func removeAll() async throws(StorageError) {
        try await base.removeAll()
    }
}

extension WritableStorage {
    /// Returns a view of this storage that can only be written.
    @inlinable
    public func writeOnly() -> WriteOnlyStorage<Self> {
        WriteOnlyStorage(base: self)
    }
}
