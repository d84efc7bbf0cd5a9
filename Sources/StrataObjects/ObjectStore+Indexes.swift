public import Strata
import _StrataInternals

extension ObjectStore {
    /// Returns the objects whose value in the index `index` meets `condition`, ordered by that
    /// value (ties by key), at most `limit` of them.
    ///
    /// ```swift
    /// let urgent = try await notes.objects(indexed: "priority", .greaterThan(2), order: .descending, limit: 10)
    /// ```
    ///
    /// The backend (an ``IndexedObjectStoreBackend``) finds the matching keys, by SQL for the
    /// database backends; the store then decodes only those objects, or takes them from the copy
    /// it keeps in memory when it has loaded one. It never loads every object.
    ///
    /// - Throws: `StorageError.Code.unsupported` when the backend keeps no indexes,
    ///   `StorageError.Code.invalidConfiguration` when it keeps none named `index`, or the errors of
    ///   ``object(withID:)``.
    public func objects(
        indexed index: String,
        _ condition: IndexQuery.Condition = .any,
        order: IndexQuery.Order = .ascending,
        limit: Int? = nil
    ) async throws(StorageError) -> [Object] {
        try await objects(matching: IndexQuery(index, condition, order: order, limit: limit))
    }

    /// Returns the objects that match `query`, in its order; see
    /// ``objects(indexed:_:order:limit:)``.
    public func objects(matching query: IndexQuery) async throws(StorageError) -> [Object] {
        if let limit = query.limit, limit <= 0 { return [] }
        let keys = try await indexedBackend().keys(matching: query)
        let snapshot = state.withLock { $0.snapshot }
        var objects: [Object] = []
        objects.reserveCapacity(keys.count)
        for key in keys {
            if let entry = snapshot?[key] {
                objects.append(entry.object)
            } else if let data = try await backend.record(forKey: key) {
                objects.append(try decode(data, key: key))
            }
        }
        return objects
    }

    /// The number of objects whose value in the index `index` meets `condition`, counted by the
    /// backend without reading any object.
    ///
    /// - Throws: as ``objects(indexed:_:order:limit:)``.
    public func count(indexed index: String, _ condition: IndexQuery.Condition = .any) async throws(StorageError) -> Int
    {
        try await indexedBackend().keys(matching: IndexQuery(index, condition)).count
    }

    private func indexedBackend() throws(StorageError) -> any IndexedObjectStoreBackend {
        guard let backend = backend as? any IndexedObjectStoreBackend else {
            throw StorageError(
                .unsupported,
                storage: name,
                message: "\(backend.name) keeps no indexes; use a backend that does, such as SQLiteObjectBackend"
            )
        }
        return backend
    }
}
