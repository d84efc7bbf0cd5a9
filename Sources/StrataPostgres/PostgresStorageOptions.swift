#if Postgres
public import Foundation
public import Logging
public import Strata

extension PostgresStorage {
    /// How a ``PostgresStorage`` behaves: its table, expiry, time limits and pool size.
    public struct Options: Sendable {
        /// The table holding the values; created when missing. Lowercase letters, digits and
        /// underscores, starting with a letter or underscore, at most 48 characters.
        public var table = "strata_values"
        /// How long a value lives when `set` gives it no time of its own; `nil` for forever.
        public var timeToLive: Duration?
        /// Rules that work out each value's lifetime from the value when it is written, instead of
        /// ``timeToLive`` (`Expiry(afterCreate:afterUpdate:)`); give this or ``timeToLive``, not
        /// both.
        ///
        /// The rules run in this process, before the write's statement or inside its
        /// transaction, so they must not use this storage. With an `afterUpdate` rule, which needs
        /// the old value's lifetime, a write reads the row under the key's lock first (as an
        /// update does), and `setValues` writes each value in its own transaction. Rules for reads
        /// (`Expiry.afterAccess(_:)` among them) are refused: each read would be a write. Put a
        /// `MemoryStorage` with an idle time in front instead.
        public var expiry: Expiry<String, Data>?
        /// How long an operation may take, waiting for a connection included, before it fails:
        /// with `StorageError.Code.io` when no connection to the server could be made in that
        /// time, `StorageError.Code.timedOut` when the server took too long to answer. Ten seconds
        /// by default.
        public var operationTimeout: Duration = .seconds(10)
        /// How long opening one connection may take. Five seconds by default.
        public var connectTimeout: Duration = .seconds(5)
        /// The most connections the pool opens. Twenty by default.
        public var maximumConnectionCount = 20

        /// The time source for expiry times. Every process sharing a table should have clocks that
        /// agree, as expiry times are written by the writer's clock and compared with the reader's.
        public var clock: any StorageClock = SystemClock()
        /// Where the storage reports what a user must hear about and no call returns: a
        /// ``SharedCache`` that lost its listening connection (at `.warning`) and that
        /// reconnected (at `.notice`, with the reason and the number of attempts), and
        /// postgres-nio's own messages about its connections (a connection that failed, and why,
        /// at `.debug` and above). Never keys or values. `nil` (the default) logs nothing.
        public var logger: Logger?
        /// Whether opening creates the table (and its trigger) when it is missing. `true` by
        /// default; a tool that only reads sets it to `false`, so that a mistyped table name
        /// fails with `StorageError.Code.notFound` instead of creating an empty table.
        public var createsTable = true
        /// Metrics under a label prefix, through swift-metrics: hits, misses, writes and
        /// expirations as `MemoryStorage` and `DiskStorage` name them, the entries and bytes held
        /// when ``PostgresStorage/statistics()`` reads them, and the `reconnects` counter of
        /// ``SharedCache``'s listening connection. `nil` (the default) reports nothing.
        public var metrics: StorageMetrics?

        /// Creates the default options: table `strata_values`, no expiry.
        public init() {}

        /// Creates options with the given table and expiry.
        public init(table: String = "strata_values", timeToLive: Duration? = nil) {
            self.table = table
            self.timeToLive = timeToLive
        }
    }
}
#endif
