import Foundation
public import Logging

/// A provider that answers from a storage when it can and fills the storage from its base
/// when it cannot.
///
/// Created by ``Provider/cache(_:reporting:logger:)`` and
/// ``Provider/cache(_:toStorage:fromStorage:reporting:logger:)``. A cache miss, a cached value that
/// cannot be read, or one that `fromStorage` rejects falls through to the base; a failed cache
/// write never fails the request. Both are passed to the `reporting` closure. The base's failures
/// are never stored, so the next request retries. Any task may use it.
public struct CachedProvider<Base: Provider, Cache: Storage>: Provider where Cache.Key == Base.ID {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    @usableFromInline let base: Base
    /// The storage consulted first.
    public let cache: Cache
    @usableFromInline let toStorage: @Sendable (Value, ID) throws -> Cache.Value
    @usableFromInline let fromStorage: @Sendable (Cache.Value, ID) throws -> Value?
    @usableFromInline let report: @Sendable (StorageError) -> Void

    @inlinable
    init(
        base: Base,
        cache: Cache,
        toStorage: @escaping @Sendable (Value, ID) throws -> Cache.Value,
        fromStorage: @escaping @Sendable (Cache.Value, ID) throws -> Value?,
        report: @escaping @Sendable (StorageError) -> Void
    ) {
        self.base = base
        self.cache = cache
        self.toStorage = toStorage
        self.fromStorage = fromStorage
        self.report = report
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        let stored: Cache.Value?
        do {
            switch try cache.immediateValue(forKey: id) {
            case .found(let value): stored = value
            case .absent: stored = nil
            case .unavailable: stored = try await cache.value(forKey: id)
            }
        } catch {
            report(error)
            stored = nil
        }
        if let stored, let value = readable(stored, for: id) {
            return value
        }
        return try await fetchAndStore(id)
    }

    /// Returns the values for `ids`, in the same order: the cache is read for all of them in
    /// one call, the base is asked in one call for those it lacks (or cannot read), and their
    /// values are stored in one call. Cache failures are reported, as for ``value(for:)``.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var found = [Value?](repeating: nil, count: ids.count)
        do {
            let stored = try await cache.values(forKeys: ids)
            for (position, stored) in zip(ids.indices, stored) {
                if let stored { found[position] = readable(stored, for: ids[position]) }
            }
        } catch {
            report(error)
        }
        let missing = found.indices.filter { found[$0] == nil }
        guard !missing.isEmpty else { return found.compactMap { $0 } }
        let fetched = try await base.values(for: missing.map { ids[$0] })
        guard fetched.count == missing.count else {
            throw StorageError(
                .sourceFailed,
                storage: "CachedProvider",
                message: "the provider below returned \(fetched.count) values for \(missing.count) IDs"
            )
        }
        var entries: [(key: ID, value: Cache.Value)] = []
        entries.reserveCapacity(missing.count)
        for (position, value) in zip(missing, fetched) {
            found[position] = value
            do {
                entries.append((ids[position], try toStorage(value, ids[position])))
            } catch {
                report(
                    StorageError.wrapping(
                        error,
                        as: .encodingFailed,
                        key: ids[position],
                        storage: "CachedProvider",
                        message: "the value was fetched but could not be cached"
                    )
                )
            }
        }
        do {
            try await cache.setValues(entries)
        } catch {
            report(
                StorageError.wrapping(
                    error,
                    as: .encodingFailed,
                    key: nil,
                    storage: "CachedProvider",
                    message: "\(entries.count) values were fetched but could not be cached"
                )
            )
        }
        return found.compactMap { $0 }
    }

    /// Answers from the cache when it holds the ID in memory; anything else (a miss, a value
    /// that does not convert, a failing cache) is left to ``value(for:)``, which reports it.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        guard case .found(let stored)? = try? cache.immediateValue(forKey: id),
            let value = try? fromStorage(stored, id)
        else { return .unavailable }
        return .found(value)
    }

    /// Converts a cached value back, or reports why it cannot and returns `nil`.
    @inlinable
    func readable(_ stored: Cache.Value, for id: ID) -> Value? {
        do {
            return try fromStorage(stored, id)
        } catch {
            report(
                StorageError.wrapping(
                    error,
                    as: .decodingFailed,
                    key: id,
                    storage: "CachedProvider",
                    message: "a cached value could not be read; fetching it again"
                ).carryingUndecodedBytes(of: stored)
            )
            return nil
        }
    }

    /// Asks the base and stores its answer; a failed write is reported, not thrown.
    @inlinable
    func fetchAndStore(_ id: ID) async throws(StorageError) -> Value {
        let value = try await base.value(for: id)
        do {
            try await cache.set(try toStorage(value, id), forKey: id)
        } catch {
            report(
                StorageError.wrapping(
                    error,
                    as: .encodingFailed,
                    key: id,
                    storage: "CachedProvider",
                    message: "the value was fetched but could not be cached"
                )
            )
        }
        return value
    }
}

extension Provider {
    /// Returns a provider that answers from `storage` when it holds the ID and otherwise asks
    /// this provider and stores the answer.
    ///
    /// - Parameters:
    ///   - storage: The cache, consulted before this provider.
    ///   - report: Told of cache failures that did not fail a request (an unreadable cached
    ///     value, a failed cache write).
    ///   - logger: Logs each such failure once at `.warning`, with the storage and the reason;
    ///     the key only at `.debug`. `nil`, the default, logs nothing.
    @inlinable
    public func cache<S: Storage<ID, Value>>(
        _ storage: S,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> CachedProvider<Self, S> {
        CachedProvider(
            base: self,
            cache: storage,
            toStorage: { value, _ in value },
            fromStorage: { value, _ in value },
            report: loggingReports(report, to: logger, as: "CachedProvider")
        )
    }

    /// Returns a provider that caches in a storage of another value type, converting both ways
    /// with the ID at hand; `fromStorage` may return `nil` (or throw) to reject a stored value,
    /// which is then fetched again. `report` and `logger` are as in ``cache(_:reporting:logger:)``.
    @inlinable
    public func cache<S: Storage>(
        _ storage: S,
        toStorage: @escaping @Sendable (Value, ID) throws -> S.Value,
        fromStorage: @escaping @Sendable (S.Value, ID) throws -> Value?,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> CachedProvider<Self, S> where S.Key == ID {
        CachedProvider(
            base: self,
            cache: storage,
            toStorage: toStorage,
            fromStorage: fromStorage,
            report: loggingReports(report, to: logger, as: "CachedProvider")
        )
    }
}
