/// A provider whose IDs are converted before they reach its base.
///
/// Created by ``Provider/mapIDs(_:)``. Any task may use it.
public struct MappedIDsProvider<Base: Provider, ID: Sendable>: Provider {
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
                storage: "MappedIDsProvider",
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

extension Provider {
    /// Returns a provider of `NewID`s, which `transform` turns into this provider's IDs.
    @inlinable
    public func mapIDs<NewID>(_ transform: @escaping @Sendable (NewID) throws -> ID) -> MappedIDsProvider<Self, NewID> {
        MappedIDsProvider(base: self, transform: transform)
    }
}
