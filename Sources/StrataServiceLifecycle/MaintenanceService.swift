public import ServiceLifecycle
public import Strata

/// Removes a storage's expired values on a schedule, as a service of the app's `ServiceGroup`:
/// `ExpiringStorage/runMaintenance(every:onError:)` until the group shuts down.
///
/// ```swift
/// let sessions = try DiskStorage(url: folder)
/// let maintenance = MaintenanceService(sessions, every: .seconds(60))
/// let group = ServiceGroup(services: [maintenance, server], logger: logger)
/// try await group.run()
/// ```
///
/// A round that fails (a database that is down, say) is retried at the next one and reported
/// to `onError`; a graceful shutdown lets the round in progress finish, then ends the service.
/// Any task may use it.
public struct MaintenanceService<Base: ExpiringStorage>: Service {
    /// The storage whose expired values are removed.
    public let storage: Base
    /// The time between the end of one round and the start of the next.
    public let interval: Duration
    private let onError: (@Sendable (StorageError) -> Void)?

    /// A service that removes `storage`'s expired values every `interval`.
    ///
    /// - Parameters:
    ///   - storage: The storage whose expired values are removed.
    ///   - interval: Positive; ``run()`` throws `StorageError.Code.invalidConfiguration` otherwise.
    ///   - onError: Called with the error of each round that fails; `nil` to ignore them.
    public init(_ storage: Base, every interval: Duration, onError: (@Sendable (StorageError) -> Void)? = nil) {
        self.storage = storage
        self.interval = interval
        self.onError = onError
    }

    /// Removes expired values every ``interval`` until the group shuts down gracefully or the
    /// task is cancelled, then returns.
    ///
    /// - Throws: `StorageError.Code.invalidConfiguration` for an interval that is not positive.
    public func run() async throws {
        let (storage, interval, onError) = (storage, interval, onError)
        try await cancelWhenGracefulShutdown { () async throws -> Void in
            try await storage.runMaintenance(every: interval, onError: onError)
        }
    }
}
