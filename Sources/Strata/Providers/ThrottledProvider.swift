/// A provider that lets at most a fixed number of requests reach its base at once; the rest wait
/// in arrival order.
///
/// Created by ``AsyncProvider/serialized()`` (one at a time) and
/// ``AsyncProvider/concurrent(limit:)``. A request cancelled while waiting leaves the queue and
/// throws ``StorageError/Code/cancelled``. Any task may use it.
public final class ThrottledProvider<Base: AsyncProvider>: AsyncProvider, Sendable {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    private let base: Base
    private let semaphore: AsyncSemaphore
    /// The most requests that reach the base at once.
    public let limit: Int

    init(base: Base, limit: Int) {
        precondition(limit > 0, "a provider's concurrency limit must be positive, got \(limit)")
        self.base = base
        self.limit = limit
        self.semaphore = AsyncSemaphore(permits: limit)
    }

    /// Returns the value for `id`, or throws why there is none.
    public func value(for id: ID) async throws(StorageError) -> Value {
        do {
            try await semaphore.acquire()
        } catch {
            throw StorageError(.cancelled, key: id, storage: "ThrottledProvider", message: "cancelled while waiting")
        }
        defer { semaphore.release() }
        return try await base.value(for: id)
    }

    /// Returns the values for `ids` from one call to the base, which takes one place among the
    /// requests let through at once.
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        do {
            try await semaphore.acquire()
        } catch {
            throw StorageError(.cancelled, storage: "ThrottledProvider", message: "cancelled while waiting")
        }
        defer { semaphore.release() }
        return try await base.values(for: ids)
    }
}

extension AsyncProvider {
    /// Returns a provider that passes one request at a time to this one, in arrival order.
    public func serialized() -> ThrottledProvider<Self> {
        ThrottledProvider(base: self, limit: 1)
    }

    /// Returns a provider that passes at most `limit` requests at a time to this one.
    ///
    /// - Precondition: `limit` is positive.
    public func concurrent(limit: Int = 4) -> ThrottledProvider<Self> {
        ThrottledProvider(base: self, limit: limit)
    }
}
