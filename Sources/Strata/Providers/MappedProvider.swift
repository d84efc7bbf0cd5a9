/// A provider whose IDs are converted before they reach its base.
///
/// Created by ``AsyncProvider/mapID(_:)``. Any task may use it.
public struct MappedIDProvider<Base: AsyncProvider, ID: Sendable>: AsyncProvider {
    /// The type of the values.
    public typealias Value = Base.Value

    @usableFromInline let base: Base
    @usableFromInline let transform: @Sendable (ID) throws -> Base.ID

    @inlinable
    init(base: Base, transform: @escaping @Sendable (ID) throws -> Base.ID) {
        self.base = base
        self.transform = transform
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        try await base.value(for: baseID(for: id))
    }

    /// Converts `id`, or throws ``StorageError/Code/invalidKey`` saying why it cannot.
    @inlinable
    func baseID(for id: ID) throws(StorageError) -> Base.ID {
        do {
            return try transform(id)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .invalidKey,
                key: id,
                storage: "MappedIDProvider",
                message: "the ID could not be converted: \(error)"
            )
        }
    }

    /// Converts the ID and asks the base for an answer without suspending.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        guard let baseID = try? transform(id) else { return .unavailable }
        return try base.immediateValue(for: baseID)
    }

    /// Converts every ID, then asks the base for all of them in one call.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var baseIDs: [Base.ID] = []
        baseIDs.reserveCapacity(ids.count)
        for id in ids { baseIDs.append(try baseID(for: id)) }
        return try await base.values(for: baseIDs)
    }
}

/// A provider whose values are converted, given their ID, on the way out of its base.
///
/// Created by ``AsyncProvider/mapValue(_:)``. A conversion that throws fails the request with
/// ``StorageError/Code/decodingFailed``; nothing downstream caches it. Any task may use it.
public struct MappedValueProvider<Base: AsyncProvider, Value: Sendable>: AsyncProvider {
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
                storage: "MappedValueProvider",
                message: "the value could not be converted: \(error)"
            )
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

extension AsyncProvider {
    /// Returns a provider of `NewID`s, which `transform` turns into this provider's IDs.
    @inlinable
    public func mapID<NewID>(_ transform: @escaping @Sendable (NewID) throws -> ID) -> MappedIDProvider<Self, NewID> {
        MappedIDProvider(base: self, transform: transform)
    }

    /// Returns a provider whose values `transform` makes from this provider's values and their
    /// IDs. Validate here, before any cache: a value that fails is never stored.
    @inlinable
    public func mapValue<NewValue>(
        _ transform: @escaping @Sendable (Value, ID) throws -> NewValue
    ) -> MappedValueProvider<Self, NewValue> {
        MappedValueProvider(base: self, transform: transform)
    }
}
