public import Strata

/// An ``ObjectStoreBackend`` that keeps index values beside its records and answers an
/// ``IndexQuery`` itself, so ``ObjectStore/objects(indexed:_:order:limit:)`` decodes only the
/// objects that match.
public protocol IndexedObjectStoreBackend: ObjectStoreBackend {
    /// The names of the indexes the backend keeps.
    var indexNames: [String] { get }

    /// The keys of the records that match `query`, in its order and within its limit.
    ///
    /// - Throws: `StorageError.Code.invalidConfiguration` when the backend keeps no index of that
    ///   name, or the backend's error.
    func keys(matching query: IndexQuery) async throws(StorageError) -> [String]
}
