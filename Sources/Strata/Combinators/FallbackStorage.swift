/// A storage that recovers from read failures with a closure.
///
/// Created by ``ReadableStorage/fallback(with:)``. Writes go to the base unchanged. Any task may
/// use it.
public struct FallbackStorage<Base: ReadableStorage>: ReadableStorage {
    /// The type that names a value.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The storage being read.
    public let base: Base
    @usableFromInline let recover: @Sendable (StorageError) throws(StorageError) -> Value?

    @inlinable
    init(base: Base, recover: @escaping @Sendable (StorageError) throws(StorageError) -> Value?) {
        self.base = base
        self.recover = recover
    }

    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        do throws(StorageError) {
            switch try base.immediateValue(forKey: key) {
            case .found(let value): return value
            case .absent: return nil
            case .unavailable: return try await base.value(forKey: key)
            }
        } catch {
            return try recover(error)
        }
    }

    /// Answers without suspending when it can: ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``, else ``ImmediateLookup/unavailable``.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        do throws(StorageError) {
            return try base.immediateValue(forKey: key)
        } catch {
            return ImmediateLookup(try recover(error))
        }
    }
}

extension FallbackStorage: WritableStorage where Base: WritableStorage {
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

extension FallbackStorage: Storage where Base: Storage {}

extension FallbackStorage: EnumerableStorage where Base: EnumerableStorage {
    /// Every key with a value, in no particular order.
    @inlinable
    public func keys() async throws(StorageError) -> [Key] {
        try await base.keys()
    }
}

extension ReadableStorage {
    /// Returns a storage that, when a read fails, asks `recover` for the value instead: it may
    /// return a replacement, `nil` (absent), or throw.
    ///
    /// ```swift
    /// let tolerant = prices.fallback { error in
    ///     guard error.code == .decodingFailed else { throw error }
    ///     return nil  // a value that no longer decodes reads as absent
    /// }
    /// ```
    ///
    /// `recover` may throw any error: a `StorageError` is thrown as it is, and any other error
    /// becomes a `StorageError` with the failed read's code, key and storage, the error as its
    /// ``StorageError/underlying``.
    @inlinable
    public func fallback(
        with recover: @escaping @Sendable (StorageError) throws -> Value?
    ) -> FallbackStorage<Self> {
        FallbackStorage(base: self) { (failure) throws(StorageError) in
            do {
                return try recover(failure)
            } catch {
                throw StorageError.wrapping(
                    error,
                    as: failure.code,
                    key: failure.key,
                    storage: failure.storage,
                    message: "the fallback could not recover from: \(failure.message)"
                )
            }
        }
    }
}
