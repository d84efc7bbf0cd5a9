import Foundation
public import Logging

/// A provider that serves cached values at once and refreshes those older than an age in the
/// background ("stale while revalidate").
///
/// Created by ``AsyncProvider/cache(_:refreshingAfter:clock:reporting:logger:)``. A value younger than
/// the age is served as is; an older one is served too, and one background fetch per ID replaces
/// it when it arrives. A failed refresh keeps the old value and is reported. A miss fetches in the
/// request, like any cache. Any task may use it.
public final class RevalidatingProvider<Base: AsyncProvider, Cache: Storage>: AsyncProvider, Sendable
where Cache.Key == Base.ID, Cache.Value == TimestampedValue<Base.Value>, Base.ID: Hashable {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    private let base: Base
    /// The storage of timestamped values.
    public let cache: Cache
    /// The age after which a served value is refreshed.
    public let refreshAge: Duration
    private let clock: any StorageClock
    private let report: @Sendable (StorageError) -> Void
    private let refreshes = LockedState([ID: Task<Void, Never>]())

    init(
        base: Base,
        cache: Cache,
        refreshAge: Duration,
        clock: any StorageClock,
        report: @escaping @Sendable (StorageError) -> Void
    ) {
        self.base = base
        self.cache = cache
        self.refreshAge = refreshAge
        self.clock = clock
        self.report = report
    }

    /// Returns the value for `id`, or throws why there is none.
    public func value(for id: ID) async throws(StorageError) -> Value {
        do {
            if let stored = try await cache.value(forKey: id) {
                if clock.now().timeIntervalSince(stored.fetched) >= refreshAge.timeInterval {
                    refreshInBackground(id)
                }
                return stored.value
            }
        } catch {
            report(error)
        }
        return try await fetchAndStore(id)
    }

    private func fetchAndStore(_ id: ID) async throws(StorageError) -> Value {
        let value = try await base.value(for: id)
        do {
            try await cache.set(TimestampedValue(value: value, fetched: clock.now()), forKey: id)
        } catch {
            report(error)
        }
        return value
    }

    private func refreshInBackground(_ id: ID) {
        // Each refresh removes itself when done; nobody cancels it, and at most one runs per ID.
        refreshes.withLock { running in
            guard running[id] == nil else { return }
            running[id] = Task { [self] in
                do throws(StorageError) {
                    _ = try await fetchAndStore(id)
                } catch {
                    report(error)
                }
                _ = refreshes.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    /// Waits until every background refresh started so far has finished.
    public func waitForRefreshes() async {
        while let task = refreshes.withLock({ $0.values.first }) {
            await task.value
        }
    }
}

extension AsyncProvider where ID: Hashable {
    /// Returns a provider that serves values from `storage` at once and refreshes any older than
    /// `age` in the background.
    ///
    /// - Parameters:
    ///   - storage: Keeps each value with the time it was fetched.
    ///   - age: How old a served value may be before it is refreshed in the background.
    ///   - clock: The time source; inject a ``ManualClock`` in tests.
    ///   - report: Told of failed refreshes and cache errors, none of which fail a request.
    ///   - logger: Logs each of those once at `.warning`, with the storage and the reason; the
    ///     key only at `.debug`. `nil`, the default, logs nothing.
    public func cache<S: Storage<ID, TimestampedValue<Value>>>(
        _ storage: S,
        refreshingAfter age: Duration,
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> RevalidatingProvider<Self, S> {
        RevalidatingProvider(
            base: self,
            cache: storage,
            refreshAge: age,
            clock: clock,
            report: loggingReports(report, to: logger, as: "RevalidatingProvider")
        )
    }
}
