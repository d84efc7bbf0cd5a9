import CoreMetrics
public import Logging
import _StrataInternals

/// What a storage tells its logger and its metrics: built once when the storage is created, and
/// only when the user asked for either, so that a storage without them carries `nil` and pays one
/// branch per call.
///
/// Counters are published from ``StorageStatistics`` snapshots: each call to ``publish(_:)``
/// reports what changed since the last one, so concurrent callers never count an event twice.
/// Any thread may use it.
@usableFromInline
package final class StorageObserver: Sendable {
    /// The storage's name in log messages, such as `MemoryStorage`.
    package let storage: String
    package let logger: Logger?
    let instruments: Instruments?
    /// The evictions counted since the current storm window opened, and its opening time.
    private let storm = LockedState(StormWindow())
    /// The highest counters published so far, and the entries and cost last reported (none at
    /// first, so the first snapshot sets the gauges).
    private let published: LockedState<StorageStatistics> = {
        var nothing = StorageStatistics()
        nothing.count = -1
        return LockedState(nothing)
    }()

    /// Builds an observer, or returns `nil` when there is nothing to observe for.
    package static func make(storage: String, logger: Logger?, metrics: StorageMetrics?) -> StorageObserver? {
        guard logger != nil || metrics != nil else { return nil }
        return StorageObserver(storage: storage, logger: logger, metrics: metrics)
    }

    package init(storage: String, logger: Logger?, metrics: StorageMetrics?) {
        self.storage = storage
        self.logger = logger
        self.instruments = metrics.map(Instruments.init)
    }

    // MARK: Metrics

    /// The metrics one storage reports; see ``StorageMetrics`` for their labels.
    final class Instruments: Sendable {
        let hits, misses, writes, rejections, damagedFiles: Counter
        let countEvictions, sizeEvictions, pressureEvictions, expirations: Counter
        let entries, bytes: Gauge
        let sourceCalls, coalescedWaiters, reconnects: Counter
        /// One timer per operation, in ``StorageOperation/allCases`` order.
        let timers: [Timer]

        init(_ metrics: StorageMetrics) {
            hits = metrics.counter("hits")
            misses = metrics.counter("misses")
            writes = metrics.counter("writes")
            rejections = metrics.counter("rejections")
            damagedFiles = metrics.counter("damaged_files")
            countEvictions = metrics.counter("evictions", [("reason", "count")])
            sizeEvictions = metrics.counter("evictions", [("reason", "size")])
            pressureEvictions = metrics.counter("evictions", [("reason", "memory_pressure")])
            expirations = metrics.counter("evictions", [("reason", "expiry")])
            entries = metrics.gauge("entries")
            bytes = metrics.gauge("bytes")
            sourceCalls = metrics.counter("source_calls")
            coalescedWaiters = metrics.counter("coalesced_waiters")
            reconnects = metrics.counter("reconnects")
            timers = StorageOperation.allCases.map { metrics.timer("duration", [("operation", $0.rawValue)]) }
        }
    }

    /// Whether metrics are on, so a caller can skip reading the clock when they are not.
    package var measuresTime: Bool { instruments != nil }

    /// Reports what changed since the last snapshot published (counters only grow, so an older
    /// snapshot published late adds nothing), sets the gauges, and logs an eviction storm.
    ///
    /// - Parameters:
    ///   - now: The storage clock's time, in seconds, for the storm window.
    ///   - countsEntries: Whether the snapshot's ``StorageStatistics/count`` and
    ///     ``StorageStatistics/totalCost`` are the storage's totals, for the gauges; a database
    ///     storage knows them only when it asks the server, and publishes its counters alone
    ///     after each operation.
    package func publish(_ snapshot: StorageStatistics, now: Double, countsEntries: Bool = true) {
        let (delta, sizeChanged) = published.withLock { last -> (StorageStatistics, Bool) in
            var delta = StorageStatistics()
            let sizeChanged =
                countsEntries && (last.count != snapshot.count || last.totalCost != snapshot.totalCost)
            if countsEntries {
                last.count = snapshot.count
                last.totalCost = snapshot.totalCost
            }
            func advance(_ current: UInt64, _ last: inout UInt64) -> UInt64 {
                guard current > last else { return 0 }
                defer { last = current }
                return current - last
            }
            delta.hits = advance(snapshot.hits, &last.hits)
            delta.misses = advance(snapshot.misses, &last.misses)
            delta.writes = advance(snapshot.writes, &last.writes)
            delta.countEvictions = advance(snapshot.countEvictions, &last.countEvictions)
            delta.sizeEvictions = advance(snapshot.sizeEvictions, &last.sizeEvictions)
            delta.pressureEvictions = advance(snapshot.pressureEvictions, &last.pressureEvictions)
            delta.expirations = advance(snapshot.expirations, &last.expirations)
            delta.rejections = advance(snapshot.rejections, &last.rejections)
            delta.damagedFiles = advance(snapshot.damagedFiles, &last.damagedFiles)
            return (delta, sizeChanged)
        }
        if let instruments {
            func add(_ counter: Counter, _ amount: UInt64) {
                if amount > 0 { counter.increment(by: Int64(clamping: amount)) }
            }
            add(instruments.hits, delta.hits)
            add(instruments.misses, delta.misses)
            add(instruments.writes, delta.writes)
            add(instruments.countEvictions, delta.countEvictions)
            add(instruments.sizeEvictions, delta.sizeEvictions)
            add(instruments.pressureEvictions, delta.pressureEvictions)
            add(instruments.expirations, delta.expirations)
            add(instruments.rejections, delta.rejections)
            add(instruments.damagedFiles, delta.damagedFiles)
            if sizeChanged {
                instruments.entries.record(snapshot.count)
                instruments.bytes.record(snapshot.totalCost)
            }
        }
        if delta.evictions > 0 {
            recordEvictions(delta.evictions, now: now)
        }
    }

    /// Records how long `operation` took, from `start` (a `ContinuousClock` instant).
    package func recordDuration(of operation: StorageOperation, since start: ContinuousClock.Instant) {
        guard let timer = instruments?.timers[operation.index] else { return }
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        timer.recordNanoseconds(seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
    }

    /// Counts a request that joined a fetch already running.
    @usableFromInline
    package func recordCoalescedWaiter() {
        instruments?.coalescedWaiters.increment()
    }

    /// Counts a call to the source.
    @usableFromInline
    package func recordSourceCall() {
        instruments?.sourceCalls.increment()
    }

    // MARK: Eviction storms

    /// More than this many evictions within one ``stormWindow`` is a storm: the cache is too small
    /// for its working set and does little but churn.
    package static let stormThreshold: UInt64 = 1_000
    /// The window over which evictions are counted, in seconds.
    package static let stormWindow: Double = 10

    struct StormWindow {
        var start = -Double.infinity
        var evictions: UInt64 = 0
        var logged = false
    }

    /// Counts evictions and logs a storm once per window.
    private func recordEvictions(_ count: UInt64, now: Double) {
        guard let logger else { return }
        let total = storm.withLock { window -> UInt64? in
            if now - window.start >= Self.stormWindow {
                window = StormWindow(start: now, evictions: 0, logged: false)
            }
            window.evictions &+= count
            guard window.evictions > Self.stormThreshold, !window.logged else { return nil }
            window.logged = true
            return window.evictions
        }
        guard let total else { return }
        logger.warning(
            "\(storage) evicted more than \(Self.stormThreshold) entries within \(Int(Self.stormWindow)) s",
            metadata: [
                "storage": "\(storage)",
                "reason": "eviction storm: the limits are too small for the working set",
                "evictions": "\(total)",
            ]
        )
    }

    // MARK: Events

    /// Logs an event a user must hear about: once, at `level`, naming the storage and the reason;
    /// the key is added only when the logger lets `.debug` through, since keys can be personal
    /// data. Values are never logged.
    @usableFromInline
    package func log(
        _ level: Logger.Level,
        _ message: @autoclosure () -> Logger.Message,
        reason: String,
        key: @autoclosure () -> String?,
        metadata extra: Logger.Metadata = [:]
    ) {
        logger?.logStorageEvent(level, message(), storage: storage, reason: reason, key: key(), metadata: extra)
    }

    /// The hook a storage with a connection calls when it has reconnected: logs once at
    /// `.notice` with the reason the connection was lost, and counts `reconnects`.
    ///
    /// Database storages (SQLite, PostgreSQL) call it after re-establishing a lost connection.
    package func recordReconnect(after reason: String, attempts: Int) {
        instruments?.reconnects.increment()
        log(
            .notice,
            "\(storage) reconnected",
            reason: reason,
            key: nil,
            metadata: ["attempts": "\(attempts)"]
        )
    }
}

/// An operation a storage times, named in the `operation` dimension of its duration timer.
@usableFromInline
package enum StorageOperation: String, CaseIterable, Sendable {
    case get, set, remove, update, trim

    /// The position in `allCases`.
    var index: Int {
        switch self {
        case .get: 0
        case .set: 1
        case .remove: 2
        case .update: 3
        case .trim: 4
        }
    }
}

extension Logger {
    /// Logs a storage event at `level`: the storage and the reason always, the key only when
    /// this logger lets `.debug` through. Never a value.
    package func logStorageEvent(
        _ level: Logger.Level,
        _ message: @autoclosure () -> Logger.Message,
        storage: String,
        reason: String,
        key: @autoclosure () -> String?,
        metadata extra: Logger.Metadata = [:]
    ) {
        guard logLevel <= level else { return }
        var metadata = extra
        metadata["storage"] = "\(storage)"
        metadata["reason"] = "\(reason)"
        if logLevel <= .debug, let key = key() {
            metadata["key"] = "\(key)"
        }
        log(level: level, message(), metadata: metadata)
    }

    /// Logs a failure that did not fail a request, such as a cache write that did not succeed:
    /// at `.warning`, with the error's storage, code and message; the key only at `.debug`.
    package func logDroppedError(_ error: StorageError, _ message: @autoclosure () -> Logger.Message) {
        logStorageEvent(
            .warning,
            message(),
            storage: error.storage,
            reason: error.message,
            key: error.key,
            metadata: ["code": "\(error.code)"]
        )
    }
}

/// Returns `report`, preceded by a `.warning` log of each error when a logger is given: for the
/// failures a provider swallows so that they never fail a request.
@usableFromInline
package func loggingReports(
    _ report: @escaping @Sendable (StorageError) -> Void,
    to logger: Logger?,
    as provider: String
) -> @Sendable (StorageError) -> Void {
    guard let logger else { return report }
    return { error in
        logger.logDroppedError(error, "\(provider): a cache failure did not fail the request")
        report(error)
    }
}
