/// A view of a storage that can only be read.
///
/// Created by ``ReadableStorage/readOnly()``; it composes like any other storage
/// (``ReadableStorage/backed(by:reporting:logger:)``, ``ReadableStorage/mapValues(_:)``). Any task may use it.
public struct ReadOnlyStorage<Base: ReadableStorage>: ReadableStorage {
    /// The type that names a value.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage being read.
    public let base: Base

    @inlinable
    init(base: Base) {
        self.base = base
    }

    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        switch try base.immediateValue(forKey: key) {
        case .found(let value): return value
        case .absent: return nil
        case .unavailable: return try await base.value(forKey: key)
        }
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(forKey: key)
    }
}

extension ReadOnlyStorage: EnumerableStorage where Base: EnumerableStorage {
    /// Every key with a value, in no particular order.
    @inlinable
    public func keys() async throws(StorageError) -> [Key] {
        try await base.keys()
    }
}

extension ReadableStorage {
    /// Returns a view of this storage that can only be read.
    @inlinable
    public func readOnly() -> ReadOnlyStorage<Self> {
        ReadOnlyStorage(base: self)
    }
}
