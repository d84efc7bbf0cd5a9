import _StrataInternals

/// A provider that lets at most a fixed number of requests reach its base at once; the rest wait
/// in arrival order.
///
/// Created by ``Provider/concurrent(maximumRequestCount:)`` and by
/// ``Provider/serialized()`` (one at a time). A request cancelled
/// while waiting leaves the queue and throws ``StorageError/Code/cancelled``. Any task may use it.
public final class ConcurrentProvider<Base: Provider>: Provider, Sendable {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    private let base: Base
    private let semaphore: AsyncSemaphore
    /// The most requests that reach the base at once.
    public let maximumRequestCount: Int

    init(base: Base, maximumRequestCount: Int) {
        precondition(maximumRequestCount > 0, "maximumRequestCount must be positive, got \(maximumRequestCount)")
        self.base = base
        self.maximumRequestCount = maximumRequestCount
        self.semaphore = AsyncSemaphore(permits: maximumRequestCount)
    }

    /// Returns the value for `id`, or throws why there is none.
    public func value(for id: ID) async throws(StorageError) -> Value {
        do {
            try await semaphore.acquire()
        } catch {
            throw StorageError(.cancelled, key: id, storage: "ConcurrentProvider", message: "cancelled while waiting")
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
            throw StorageError(.cancelled, storage: "ConcurrentProvider", message: "cancelled while waiting")
        }
        defer { semaphore.release() }
        return try await base.values(for: ids)
    }
}

extension Provider {
    /// Returns a provider that passes one request at a time to this one, in arrival order.
    public func serialized() -> ConcurrentProvider<Self> {
        ConcurrentProvider(base: self, maximumRequestCount: 1)
    }

    /// Returns a provider that passes at most `maximumRequestCount` requests at a time to this
    /// one; the rest wait in arrival order.
    ///
    /// - Precondition: `maximumRequestCount` is positive.
    public func concurrent(maximumRequestCount: Int = 4) -> ConcurrentProvider<Self> {
        ConcurrentProvider(base: self, maximumRequestCount: maximumRequestCount)
    }
}
