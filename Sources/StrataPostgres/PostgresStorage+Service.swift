#if Postgres
public import ServiceLifecycle

extension PostgresStorage: Service {
    /// Runs until the service group shuts down gracefully (or this task is cancelled), then
    /// closes: operations in flight end, later ones throw `StorageError.Code.closed`, and the
    /// pool this storage made stops. A storage over the app's client leaves the client running:
    /// list the client before the storage in the `ServiceGroup`, so that it stops after it.
    ///
    /// ```swift
    /// let storage = try await PostgresStorage(url: url)
    /// let group = ServiceGroup(services: [storage, server], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}

extension SharedCache: Service {
    /// Runs until the service group shuts down gracefully (or this task is cancelled), then
    /// closes: it stops listening and empties its memory. The ``SharedCache/storage`` is a
    /// service of its own; list it before the cache, so that it stops after it.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}
#endif
