/// Turns an ID into a value from a source that may fail: a network, a database, a computation.
///
/// Unlike a storage, a provider always produces a value or throws; it never answers "absent".
/// Compose one from a source with modifiers, innermost first, and finish an async chain with
/// ``Provider/coordinated(logger:metrics:)`` so concurrent requests for one ID share one fetch:
///
/// ```swift
/// let avatars = AnyProvider { (url: URL) in try await download(url) }
///     .mapValues { data, _ in try Avatar(png: data) }          // validate before caching
///     .cache(MemoryStorage<URL, Avatar>(maximumCount: 500))
///     .coordinated()
/// let avatar = try await avatars.value(for: url)
/// ```
///
/// A failure is never cached: the next request for the ID calls the source again.
public protocol Provider<ID, Value>: Sendable {
    /// What names a value.
    associatedtype ID: Sendable
    /// What the provider produces.
    associatedtype Value: Sendable
    /// Produces the value for `id`.
    ///
    /// - Throws: ``StorageError``: the source's failure as ``StorageError/Code/sourceFailed``
    ///   (the original error in ``StorageError/underlying``), ``StorageError/Code/cancelled`` when
    ///   the task is cancelled, ``StorageError/Code/timedOut`` past a timeout.
    func value(for id: ID) async throws(StorageError) -> Value

    /// Answers a request without suspending when the provider can, or says it cannot.
    ///
    /// A ``CachedProvider`` answers ``ImmediateLookup/found(_:)`` when its storage holds the ID in
    /// memory; ``Provider/coordinated(logger:metrics:)`` then returns that value at the cost
    /// of the cache lookup, with no continuation and no task. Everything else answers
    /// ``ImmediateLookup/unavailable`` (the default): call ``value(for:)``. A provider never
    /// answers ``ImmediateLookup/absent``.
    func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value>

    /// Produces the values for `ids`, in the same order.
    ///
    /// A ``BatchProvider`` asks its source for many IDs in one call; ``CachedProvider`` reads
    /// its storage for all of them at once and asks the provider below only for those it lacks,
    /// in one call; ``Provider/coordinated(logger:metrics:)`` fetches them together and
    /// lets overlapping requests share fetches. The default asks ``value(for:)`` for each ID,
    /// one after another.
    ///
    /// - Throws: ``StorageError``, as ``value(for:)`` does; the first failure fails the call.
    func values(for ids: [ID]) async throws(StorageError) -> [Value]
}

extension Provider {
    /// Answers ``ImmediateLookup/unavailable``: this provider must suspend to answer.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        .unavailable
    }

    /// Asks ``value(for:)`` for each ID, one after another; an answer this provider can give at
    /// once is taken without suspending.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var values: [Value] = []
        values.reserveCapacity(ids.count)
        for id in ids {
            if case .found(let value) = try immediateValue(for: id) {
                values.append(value)
            } else {
                values.append(try await value(for: id))
            }
        }
        return values
    }
}

/// A provider that answers synchronously, for sources that need no I/O (a computation, a
/// bundled resource). Its ``Provider`` conformance lets it join any async chain.
public struct SyncProvider<ID: Sendable, Value: Sendable>: Provider {
    @usableFromInline let source: @Sendable (ID) throws -> Value
    @usableFromInline let name: String

    /// Creates a provider that calls `source`.
    public init(name: String = "SyncProvider", _ source: @escaping @Sendable (ID) throws -> Value) {
        self.source = source
        self.name = name
    }

    /// Produces the value for `id` without suspending.
    @inlinable
    public func value(for id: ID) throws(StorageError) -> Value {
        do {
            return try source(id)
        } catch {
            throw StorageError.sourceFailed(error, id: id, provider: name)
        }
    }
}

extension StorageError {
    /// The error a provider named `provider` throws when its source closure throws `error` for
    /// `id`: a `sourceFailed` that keeps `error` (or `error` itself when it is a `StorageError`).
    @inlinable
    static func sourceFailed(_ error: any Error, id: some Sendable, provider: String) -> StorageError {
        wrapping(error, as: .sourceFailed, key: id, storage: provider, message: "the source failed: \(error)")
    }
}
