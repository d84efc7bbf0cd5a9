import Foundation
public import Logging
import _StrataInternals

/// A provider that serves cached values at once and refreshes those older than an age in the
/// background ("stale while revalidate").
///
/// Created by ``Provider/cache(_:refreshingAfter:refreshTimeLimit:clock:reporting:logger:)``. A value younger than
/// the age is served as is; an older one is served too, and one background fetch per ID replaces
/// it when it arrives. A failed refresh keeps the old value and is reported. A refresh that takes
/// longer than ``refreshTimeLimit`` is given up (reported as ``StorageError/Code/timedOut``; its
/// fetch is cancelled), so a source that never answers cannot block the later refreshes of its
/// ID; ``cancelRefreshes()`` gives up every one at once. A miss fetches in the request, like any
/// cache. Any task may use it.
public final class RefreshingCachedProvider<Base: Provider, Cache: Storage>: Provider, Sendable
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
    /// The longest a background refresh may take before it is given up.
    public let refreshTimeLimit: Duration
    private let clock: any StorageClock
    private let report: @Sendable (StorageError) -> Void
    private let refreshes = LockedState([ID: Task<Void, Never>]())

    init(
        base: Base,
        cache: Cache,
        refreshAge: Duration,
        refreshTimeLimit: Duration,
        clock: any StorageClock,
        report: @escaping @Sendable (StorageError) -> Void
    ) {
        self.base = base
        self.cache = cache
        self.refreshAge = refreshAge
        self.refreshTimeLimit = refreshTimeLimit
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
        // Each refresh removes itself when done, which the time limit makes sure it is; at most
        // one runs per ID.
        refreshes.withLock { running in
            guard running[id] == nil else { return }
            running[id] = Task { [self] in
                let limit = refreshTimeLimit
                let outcome = await Deadline.race(within: limit) { () async throws(StorageError) -> Value in
                    try await self.fetchAndStore(id)
                }
                switch outcome {
                case .value, .cancelled:
                    break
                case .failure(let error):
                    report(error)
                case .timedOut:
                    report(
                        StorageError(
                            .timedOut,
                            key: id,
                            storage: "RefreshingCachedProvider",
                            message: "the background refresh took longer than \(limit) and was given up; "
                                + "the stored value is kept"
                        )
                    )
                }
                _ = refreshes.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    /// Gives up every background refresh under way (their fetches are cancelled); the stored
    /// values are kept, and the next stale request starts a new refresh.
    public func cancelRefreshes() {
        for task in refreshes.withLock({ Array($0.values) }) { task.cancel() }
    }

    /// Waits until every background refresh started so far has finished.
    public func waitForRefreshes() async {
        while let task = refreshes.withLock({ $0.values.first }) {
            await task.value
        }
    }
}

extension Provider where ID: Hashable {
    /// Returns a provider that serves values from `storage` at once and refreshes any older than
    /// `age` in the background.
    ///
    /// - Parameters:
    ///   - storage: Keeps each value with the time it was fetched.
    ///   - age: How old a served value may be before it is refreshed in the background.
    ///   - refreshTimeLimit: The longest a background refresh may take before it is given up and
    ///     reported as ``StorageError/Code/timedOut``.
    ///   - clock: The time source for ages; inject a ``ManualClock`` in tests.
    ///   - report: Told of failed refreshes and cache errors, none of which fail a request.
    ///   - logger: Logs each of those once at `.warning`, with the storage and the reason; the
    ///     key only at `.debug`. `nil`, the default, logs nothing.
    public func cache<S: Storage<ID, TimestampedValue<Value>>>(
        _ storage: S,
        refreshingAfter age: Duration,
        refreshTimeLimit: Duration = .seconds(30),
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> RefreshingCachedProvider<Self, S> {
        RefreshingCachedProvider(
            base: self,
            cache: storage,
            refreshAge: age,
            refreshTimeLimit: refreshTimeLimit,
            clock: clock,
            report: loggingReports(report, to: logger, as: "RefreshingCachedProvider")
        )
    }
}
