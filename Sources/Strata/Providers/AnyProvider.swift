/// A type-erased provider, to store a chain in a property or replace it with a mock in tests.
public struct AnyAsyncProvider<ID: Sendable, Value: Sendable>: AsyncProvider {
    @usableFromInline let base: any AsyncProvider<ID, Value>

    /// Wraps `base`.
    public init(_ base: some AsyncProvider<ID, Value>) {
        self.base = base
    }

    /// Wraps a closure, for instance a mock in a test.
    public init(_ body: @escaping @Sendable (ID) async throws(StorageError) -> Value) {
        self.base = ClosureProvider(body: body)
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        try await base.value(for: id)
    }

    /// Asks the wrapped provider for an answer without suspending.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        try base.immediateValue(for: id)
    }

    /// Returns the wrapped provider's values for `ids`, in one call to it.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        try await base.values(for: ids)
    }
}

extension AsyncProvider {
    /// Erases the provider's type.
    public func eraseToAnyProvider() -> AnyAsyncProvider<ID, Value> {
        AnyAsyncProvider(self)
    }
}
