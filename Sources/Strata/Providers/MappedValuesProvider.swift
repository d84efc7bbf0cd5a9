/// A provider whose values are converted, given their ID, on the way out of its base.
///
/// Created by ``Provider/mapValues(_:)``. A conversion that throws fails the request with
/// ``StorageError/Code/decodingFailed``; nothing downstream caches it. Any task may use it.
public struct MappedValuesProvider<Base: Provider, Value: Sendable>: Provider {
    /// The type that names a value.
    public typealias ID = Base.ID

    @usableFromInline let base: Base
    @usableFromInline let transform: @Sendable (Base.Value, ID) throws -> Value

    @inlinable
    init(base: Base, transform: @escaping @Sendable (Base.Value, ID) throws -> Value) {
        self.base = base
        self.transform = transform
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        try converted(await base.value(for: id), for: id)
    }

    /// Converts `value`, or throws ``StorageError/Code/decodingFailed`` saying why it cannot.
    @inlinable
    func converted(_ value: Base.Value, for id: ID) throws(StorageError) -> Value {
        do {
            return try transform(value, id)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .decodingFailed,
                key: id,
                storage: "MappedValuesProvider",
                message: "the value could not be converted: \(error)"
            ).carryingUndecodedBytes(of: value)
        }
    }

    /// Converts the base's immediate answer; a value that does not convert is left to
    /// ``value(for:)``, which reports why.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        guard case .found(let value) = try base.immediateValue(for: id),
            let converted = try? transform(value, id)
        else { return .unavailable }
        return .found(converted)
    }

    /// Asks the base for every ID in one call, then converts each value.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        let values = try await base.values(for: ids)
        var converted: [Value] = []
        converted.reserveCapacity(values.count)
        for (id, value) in zip(ids, values) { converted.append(try self.converted(value, for: id)) }
        return converted
    }
}

extension Provider {
    /// Returns a provider whose values `transform` makes from this provider's values and their
    /// IDs. Validate here, before any cache: a value that fails is never stored.
    @inlinable
    public func mapValues<NewValue>(
        _ transform: @escaping @Sendable (Value, ID) throws -> NewValue
    ) -> MappedValuesProvider<Self, NewValue> {
        MappedValuesProvider(base: self, transform: transform)
    }
}
