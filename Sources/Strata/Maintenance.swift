/// A storage whose expired values can be removed without being read: every storage of Strata that
/// takes a time to live.
///
/// Memory and disk storages (in cache mode) also remove expired values as they go: each new value
/// looks at two others, so a cache written once per request and never read stays near the size of
/// what is alive. ``runMaintenance(every:onError:)`` does the rest on a schedule, for stores of
/// record and databases, or to give the memory back sooner.
public protocol ExpiringStorage: Sendable {
    /// Removes every expired value now and returns how many there were.
    func removeExpired() async throws(StorageError) -> Int
}

extension ExpiringStorage {
    /// Removes expired values every `interval` until the task running it is cancelled, then
    /// returns.
    ///
    /// Run it as a long-lived task of the app:
    ///
    /// ```swift
    /// let maintenance = Task { await storage.runMaintenance(every: .seconds(60)) }
    /// // ...
    /// maintenance.cancel()
    /// ```
    ///
    /// A round that fails (a database that is down, say) is retried at the next one; `onError`
    /// hears of it. An interval of zero or less is a programmer error: the program stops with a
    /// message that names it.
    ///
    /// - Parameters:
    ///   - interval: The time between the end of one round and the start of the next; positive.
    ///   - onError: Called with the error of each round that fails; `nil` to ignore them.
    public func runMaintenance(
        every interval: Duration,
        onError: (@Sendable (StorageError) -> Void)? = nil
    ) async {
        ConfigurationRule.require(
            interval > .zero,
            "runMaintenance(every:) needs a positive interval, got \(interval)",
            in: "\(Self.self)"
        )
        while !Task.isCancelled {
            do throws(StorageError) {
                _ = try await removeExpired()
            } catch {
                if error.code == .cancelled || Task.isCancelled { return }
                onError?(error)
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
