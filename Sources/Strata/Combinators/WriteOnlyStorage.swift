/// A view of a storage that can only be written.
///
/// Created by ``WritableStorage/writeOnly()``; it composes with ``WritableStorage/pushing(to:)``.
/// Any task may use it.
public struct WriteOnlyStorage<Base: WritableStorage>: WritableStorage {
    public typealias Key = Base.Key
    public typealias Value = Base.Value

    /// The storage being written.
    public let base: Base

    @inlinable
    init(base: Base) {
        self.base = base
    }

    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await base.set(value, forKey: key)
    }

    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await base.removeValue(forKey: key)
    }
}

extension WriteOnlyStorage: ClearableStorage where Base: ClearableStorage {
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
