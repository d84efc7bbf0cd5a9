#if ServiceLifecycle
public import ServiceLifecycle
public import Strata

/// Removes a storage's expired values on a schedule, as a service of the app's `ServiceGroup`:
/// what `runMaintenance(every:onError:)` does, until the group shuts down.
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
/// A round removes only expired values, so stopping between rounds loses nothing.
/// Any task may use it.
public struct MaintenanceService<Base: ExpiringStorage>: Service {
    /// The storage whose expired values are removed.
    public let storage: Base
    /// The time between the end of one round and the start of the next.
    public let interval: Duration
    private let onError: (@Sendable (StorageError) -> Void)?

    /// A service that removes `storage`'s expired values every `interval`.
    ///
    /// An interval of zero or less is a programmer error: the program stops with a message that
    /// names it.
    ///
    /// - Parameters:
    ///   - storage: The storage whose expired values are removed.
    ///   - interval: The time between the end of one round and the start of the next; positive.
    ///   - onError: Called with the error of each round that fails; `nil` to ignore them.
    public init(_ storage: Base, every interval: Duration, onError: (@Sendable (StorageError) -> Void)? = nil) {
        ConfigurationRule.require(
            interval > .zero,
            "the interval between rounds must be positive, got \(interval)",
            in: "MaintenanceService"
        )
        self.storage = storage
        self.interval = interval
        self.onError = onError
    }

    /// Removes expired values every ``interval`` until the group shuts down gracefully or the
    /// task is cancelled, then returns. A graceful shutdown ends the wait for the next round; a
    /// round in progress finishes first.
    public func run() async throws {
        let interval = interval
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do throws(StorageError) {
                _ = try await storage.removeExpired()
            } catch {
                if error.code == .cancelled || Task.isCancelled { return }
                onError?(error)
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
#endif
