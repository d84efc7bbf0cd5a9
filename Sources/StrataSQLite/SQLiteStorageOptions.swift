public import Dispatch
public import Foundation
public import Logging
public import Strata

extension SQLiteStorage {
    /// How a ``SQLiteStorage`` behaves: limits, expiry, recency and its clock.
    public struct Options: Sendable {
        /// How long a value lives when `set` gives it no time of its own; `nil` for forever.
        public var timeToLive: Duration?
        /// Rules that work out each value's lifetime instead of ``timeToLive``: from the value
        /// when it is written (`Expiry(afterCreate:afterUpdate:)`), or an idle time that reads
        /// renew (`Expiry.afterAccess(_:)`).
        ///
        /// The rules run inside the write's transaction, as an update's body does, so they must
        /// not use this storage. An idle time is renewed when a read records its access (see
        /// ``recencyResolution``), at least every sixteenth of the idle time, so a value read now
        /// and then may expire up to that much early. Other rules for reads are refused: each read
        /// would be a write. Give this or ``timeToLive``, not both.
        public var expiry: Expiry<String, Data>?
        /// The most bytes the values may take (each counts its value's and key's bytes); `nil` for
        /// no limit. Least recently used values are evicted to stay under it.
        public var maximumByteCount: Int?
        /// The most values kept; `nil` for no limit. Least recently used values are evicted.
        public var maximumCount: Int?
        /// How long a value's recorded access time may lag before a read refreshes it.
        ///
        /// A read that refreshes the time is a write; within this interval reads only read. Least
        /// recently used eviction is exact to within this interval. One minute by default.
        public var recencyResolution: Duration = .seconds(60)
        /// How long a call waits for another process's write lock before failing with
        /// `StorageError.Code.timedOut`. Five seconds by default.
        public var busyTimeout: Duration = .seconds(5)
        /// The time source for access and expiry times.
        public var clock: any StorageClock = SystemClock()
        /// The quality of service of the database's own queues, where every statement runs.
        /// `.userInitiated` by default; a cache an app fills in the background may use `.utility`.
        public var qualityOfService: DispatchQoS = .userInitiated
        /// How many connections may read at once (reads never wait for a write). Five by
        /// default; at least one.
        public var maximumReaderCount = 5
        /// Whether the storage stops taking database locks while the process is suspended, between
        /// ``SQLiteStorage/suspendAll()`` and ``SQLiteStorage/resumeAll()``. Off by default.
        ///
        /// Turn it on for a file in an app group container that an app and its extensions share:
        /// iOS kills a process suspended while it holds a lock on such a file (`0xdead10cc`).
        /// While suspended, reads still answer and writes fail with `StorageError.Code.io`
        /// saying so.
        public var observesSuspensionNotifications = false
        /// Where to report hits, misses, writes, evictions and, when `SQLiteStorage.statistics()`
        /// reads them, the entries and bytes held; `nil` (the default) reports nothing. The
        /// figures are those of `MemoryStorage` and `DiskStorage`, under the same names.
        public var metrics: StorageMetrics?
        /// Where to log what a user must hear about: an eviction storm (more than 1,000
        /// evictions within 10 seconds, at `.warning`, once per window, without keys), as
        /// `MemoryStorage` and `DiskStorage` log it. `nil`, the default, logs nothing.
        public var logger: Logger?

        /// Creates the default options: no limits, no expiry.
        public init() {}

        /// Creates options with the given limits and expiry.
        public init(
            timeToLive: Duration? = nil,
            maximumByteCount: Int? = nil,
            maximumCount: Int? = nil,
            clock: any StorageClock = SystemClock()
        ) {
            self.timeToLive = timeToLive
            self.maximumByteCount = maximumByteCount
            self.maximumCount = maximumCount
            self.clock = clock
        }
    }
}
