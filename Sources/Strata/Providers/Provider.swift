/// Turns an ID into a value from a source that may fail: a network, a database, a computation.
///
/// Unlike a storage, a provider always produces a value or throws; it never answers "absent".
/// Compose one from a source with modifiers, innermost first, and finish an async chain with
/// ``AsyncProvider/coordinated(logger:metrics:)`` so concurrent requests for one ID share one fetch:
///
/// ```swift
/// let avatars = Provider { (url: URL) in try await download(url) }
///     .mapValue { data, _ in try Avatar(png: data) }          // validate before caching
///     .cache(try MemoryStorage<URL, Avatar>(maximumCount: 500))
///     .coordinated()
/// let avatar = try await avatars.value(for: url)
/// ```
///
/// A failure is never cached: the next request for the ID calls the source again.
public protocol AsyncProvider<ID, Value>: Sendable {
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
    /// memory; ``AsyncProvider/coordinated(logger:metrics:)`` then returns that value at the cost
    /// of the cache lookup, with no continuation and no task. Everything else answers
    /// ``ImmediateLookup/unavailable`` (the default): call ``value(for:)``. A provider never
    /// answers ``ImmediateLookup/absent``.
    func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value>

    /// Produces the values for `ids`, in the same order.
    ///
    /// A ``BatchProvider`` asks its source for many IDs in one call; ``CachedProvider`` reads
    /// its storage for all of them at once and asks the provider below only for those it lacks,
    /// in one call; ``AsyncProvider/coordinated(logger:metrics:)`` fetches them together and
    /// lets overlapping requests share fetches. The default asks ``value(for:)`` for each ID,
    /// one after another.
    ///
    /// - Throws: ``StorageError``, as ``value(for:)`` does; the first failure fails the call.
    func values(for ids: [ID]) async throws(StorageError) -> [Value]
}

extension AsyncProvider {
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

/// A provider from a closure: the source at the root of a chain.
///
/// Any task may use it; the closure must be safe to call concurrently.
public struct Provider<ID: Sendable, Value: Sendable>: AsyncProvider {
    @usableFromInline let source: @Sendable (ID) async throws -> Value
    @usableFromInline let name: String

    /// Creates a provider that calls `source`. An error it throws (other than a
    /// ``StorageError``) is wrapped as ``StorageError/Code/sourceFailed``.
    ///
    /// - Parameters:
    ///   - name: Names the source in errors.
    ///   - source: Fetches the value for an ID; called concurrently.
    public init(name: String = "Provider", _ source: @escaping @Sendable (ID) async throws -> Value) {
        self.source = source
        self.name = name
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        do {
            return try await source(id)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .sourceFailed,
                key: id,
                storage: name,
                message: "the source failed: \(error)"
            )
        }
    }
}

/// A provider that answers synchronously, for sources that need no I/O (a computation, a
/// bundled resource). Its ``AsyncProvider`` conformance lets it join any async chain.
public struct SyncProvider<ID: Sendable, Value: Sendable>: AsyncProvider {
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
            throw StorageError.wrapping(
                error,
                as: .sourceFailed,
                key: id,
                storage: name,
                message: "the source failed: \(error)"
            )
        }
    }
}

@usableFromInline
struct ClosureProvider<ID: Sendable, Value: Sendable>: AsyncProvider {
    let body: @Sendable (ID) async throws(StorageError) -> Value

    @usableFromInline
    func value(for id: ID) async throws(StorageError) -> Value {
        try await body(id)
    }
}
