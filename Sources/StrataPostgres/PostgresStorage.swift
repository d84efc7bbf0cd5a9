#if Postgres
package import Foundation
package import Logging
import NIOCore
public import PostgresNIO
public import Strata
import Synchronization
import _StrataInternals

/// A storage of `Data` in a PostgreSQL table that many processes and machines share, over a
/// pool of connections.
///
/// Keys are stored as their UTF-8 bytes and found by their SHA-256 digest, so any key (SQL-looking,
/// NUL, 10 KB long) is stored verbatim; keys and values reach the server only as bound parameters.
/// A trigger on the table announces every change with `NOTIFY`, which ``SharedCache`` uses to keep
/// memory layers in several processes fresh and ``changes(bufferingNewest:)`` streams.
///
/// The storage owns a `PostgresClient` and the task that runs it: call ``close()`` when done
/// (releasing the storage also stops it). Every operation has a time limit
/// (``Options/operationTimeout``), so a server that is down fails calls with
/// `StorageError.Code.io` instead of hanging them; the pool reconnects when the server is back.
/// Any task may use a `PostgresStorage`.
///
/// ```swift
/// let shared = try await PostgresStorage(url: "postgres://app@127.0.0.1:5432/app")
/// try await shared.set(Data("hello".utf8), forKey: "greeting")
/// ```
public final class PostgresStorage: Sendable {
    /// The client's configuration: where the server is and who connects; `nil` for a storage
    /// over a client the app runs (``init(client:options:)``).
    public let configuration: PostgresClient.Configuration?
    /// The options the storage was opened with.
    public let options: Options
    /// The `application_name` every connection of this storage reports; ``SharedCache`` uses it
    /// to tell this instance's own changes from other processes'. A storage over a client the
    /// app runs cannot name its connections: its own changes look like another process's.
    public let instanceName: String
    /// The channel the table's trigger notifies changes on: the table's name and `_changes`.
    public var channel: String { options.table + "_changes" }

    let client: PostgresClient
    /// The logger and metrics of ``Options/logger`` and ``Options/metrics``, or `nil` for neither.
    let observer: StorageObserver?
    /// Runs the client this storage made, until close() or deinit; `nil` for the app's client.
    let runner: Task<Void, Never>?
    /// Whether the storage is closed, the operations in flight, and close() calls waiting for
    /// them to end.
    let activity = LockedState(Activity())
    /// Set once the table is known to exist, for a storage over the app's client, which cannot
    /// look for it before the client runs: the first operation does.
    let preparation: Preparation?
    /// What this instance has counted since it was opened, published to ``Options/metrics``.
    let counters: StatisticsCounter
    let name = "PostgresStorage"
    let table: String
    let server: String
    package static let logger = Logger(label: "Strata.PostgresStorage", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Connects to the server at `url` (`postgres://user[:password]@host[:port]/database`) and
    /// creates the table when it is missing.
    ///
    /// The URL's `sslmode` means what it means to libpq: `disable` (the default) never encrypts;
    /// `allow` and `prefer` encrypt when the server offers it; `require` always encrypts, without
    /// checking the server's certificate; `verify-ca` also checks that the certificate chains to a
    /// trusted root; `verify-full` also checks that it names the host. `sslrootcert=<file>`
    /// trusts the roots in that PEM file instead of the system's (and makes `require` check the
    /// chain, as in libpq).
    ///
    /// - Throws: `StorageError` code `StorageError.Code.invalidConfiguration` for a URL or
    ///   option it cannot use, `StorageError.Code.io` when the server cannot be reached within
    ///   ``Options/operationTimeout`` or refuses the table, `StorageError.Code.notFound` when
    ///   the table is missing and ``Options/createsTable`` is `false`.
    public convenience init(url: String, options: Options = Options()) async throws(StorageError) {
        let configuration = try Self.configuration(from: url)
        try await self.init(configuration: configuration, options: options)
    }

    /// Connects with `configuration` and creates the table when it is missing.
    ///
    /// - Throws: as ``init(url:options:)``.
    public init(configuration: PostgresClient.Configuration, options: Options = Options()) async throws(StorageError) {
        try Self.validate(options)
        let instanceName = "strata-\(UUID().uuidString.lowercased())"
        var configuration = configuration
        configuration.options.connectTimeout = options.connectTimeout
        configuration.options.maximumConnections = max(1, options.maximumConnectionCount)
        configuration.options.additionalStartupParameters.append(("application_name", instanceName))
        self.configuration = configuration
        self.options = options
        self.instanceName = instanceName
        self.observer = StorageObserver.make(
            storage: "PostgresStorage",
            logger: options.logger,
            metrics: options.metrics
        )
        self.counters = StatisticsCounter(observer: observer, clock: options.clock)
        self.table = options.table
        self.server = "\(configuration.host ?? configuration.unixSocketPath ?? "?"):\(configuration.port ?? 5432)"
        // postgres-nio's own messages (connections opened, lost and retried) go to the same logger.
        let client = PostgresClient(
            configuration: configuration,
            backgroundLogger: options.logger ?? Self.logger
        )
        self.client = client
        // Runs the pool until close() or deinit cancels it.
        let runner = Task { await client.run() }
        self.runner = runner
        self.preparation = nil
        do {
            try await prepareTable()
        } catch {
            runner.cancel()
            throw error
        }
    }

    /// Checks what every initializer checks: the table's name and the time to live.
    static func validate(_ options: Options) throws(StorageError) {
        guard Self.isValidTableName(options.table) else {
            throw StorageError(
                .invalidConfiguration,
                storage: "PostgresStorage",
                message:
                    "the table name '\(options.table)' is not lowercase letters, digits and underscores (at most 48), or is a word PostgreSQL reserves"
            )
        }
        ConfigurationRule.requireUsableLimits(
            of: "PostgresStorage",
            maximumCount: nil,
            maximumCost: nil,
            timeToLive: options.timeToLive,
            expiry: options.expiry
        )
        if let problem = options.expiry?.problemWithoutReadRules(in: "PostgresStorage") {
            ConfigurationRule.require(false, problem, in: "PostgresStorage")
        }
    }

    /// The lifetime a write of `value` for `key` gives it, as a layer in front of this storage
    /// (``SharedCache``'s memory) should keep it.
    package enum WrittenLifetime: Equatable {
        /// This long, or forever for `nil`.
        case lifetime(Duration?)
        /// It depends on the value the write replaces (an `afterUpdate` rule): not known here.
        case unknown
        /// It has already run out: the write removes the key.
        case ranOut
    }

    /// The lifetime ``set(_:forKey:timeToLive:)`` gives `value` for `key`.
    package func lifetimeOfWrite(_ value: Data, forKey key: String, timeToLive: Duration?) -> WrittenLifetime {
        if let timeToLive { return timeToLive <= .zero ? .ranOut : .lifetime(timeToLive) }
        guard let rules = options.expiry else { return .lifetime(options.timeToLive) }
        guard !rules.hasUpdateRule else { return .unknown }
        switch rules.afterCreate(key, value) {
        case .unlimited: return .lifetime(nil)
        case .remaining(let duration): return duration > .zero ? .lifetime(duration) : .ranOut
        }
    }

    /// Creates the table, or checks that it exists when ``Options/createsTable`` is `false`.
    func prepareTable() async throws(StorageError) {
        if options.createsTable {
            try await createTable()
        } else {
            try await requireTable()
        }
    }

    /// Uses `client`, a client the app runs (in its `ServiceGroup`, say), and creates the table
    /// when it is missing, on the first operation: the client need not run yet.
    ///
    /// The storage never runs, stops or closes `client`; ``close()`` waits for its own operations
    /// only. PostgresNIO has the client's settings; ``Options/connectTimeout`` and
    /// ``Options/maximumConnectionCount`` do not apply. A ``SharedCache`` over this storage cannot
    /// tell its own changes from other processes' (its connections do not carry
    /// ``instanceName``): its memory drops a key after each of its own writes too, which costs a
    /// read and loses nothing.
    ///
    /// ```swift
    /// let client = PostgresClient(configuration: configuration)
    /// let storage = try PostgresStorage(client: client, options: .init(table: "sessions"))
    /// // The storage shuts down before the client: services stop in reverse order.
    /// let group = ServiceGroup(services: [client, storage], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// - Throws: `StorageError.Code.invalidConfiguration` for a table name it cannot use (a time
    ///   to live of zero or less, or one beside `expiry`, stops the program as a programmer
    ///   error). Errors reaching the server come from the first operation, as from
    ///   ``init(url:options:)``.
    public init(client: PostgresClient, options: Options = Options()) throws(StorageError) {
        try Self.validate(options)
        self.configuration = nil
        self.options = options
        self.instanceName = "strata-\(UUID().uuidString.lowercased())"
        self.observer = StorageObserver.make(
            storage: "PostgresStorage",
            logger: options.logger,
            metrics: options.metrics
        )
        self.counters = StatisticsCounter(observer: observer, clock: options.clock)
        self.table = options.table
        self.server = "the app's PostgresClient"
        self.client = client
        self.runner = nil
        self.preparation = Preparation()
    }

    deinit {
        runner?.cancel()
    }

    /// Whether the storage is closed and what it is doing.
    struct Activity {
        var isClosed = false
        var inFlight = 0
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    /// The first operation's check for the table, made once.
    final class Preparation: Sendable {
        let mutex = AsyncMutex()
        let isDone = Atomic(false)
    }

    /// Refuses new operations (they throw `StorageError.Code.closed`), waits for those in
    /// flight to end (each within ``Options/operationTimeout``), then stops the pool this storage
    /// made and closes its connections. A write that returned before `close()` was called is
    /// committed; one in flight is committed or throws. Calling it again waits as the first call
    /// does.
    ///
    /// A storage over the app's client (``init(client:options:)``) leaves the client running.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let drained = activity.withLock { activity -> Bool in
                activity.isClosed = true
                if activity.inFlight == 0 { return true }
                activity.drained.append(continuation)
                return false
            }
            if drained { continuation.resume() }
        }
        guard let runner else { return }
        runner.cancel()
        await runner.value
    }

    /// Drops the table and its trigger's function behind the storage's back, keeping it open;
    /// for tests. Failures are ignored.
    package func dropTableForTesting() async {
        let table = table
        _ = try? await perform("drop", key: nil) { connection in
            try await connection.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: Self.logger)
            try await connection.query("DROP FUNCTION IF EXISTS \(unescaped: table)_notify", logger: Self.logger)
        }
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool {
        activity.withLock { $0.isClosed }
    }

    /// Counts an operation in, or says the storage is closed.
    func begin() -> Bool {
        activity.withLock { activity in
            guard !activity.isClosed else { return false }
            activity.inFlight += 1
            return true
        }
    }

    /// Counts an operation out, resuming close() calls once none is left.
    func end() {
        let drained = activity.withLock { activity -> [CheckedContinuation<Void, Never>] in
            activity.inFlight -= 1
            guard activity.isClosed, activity.inFlight == 0 else { return [] }
            defer { activity.drained = [] }
            return activity.drained
        }
        for continuation in drained { continuation.resume() }
    }

    // MARK: Keys and time

    /// The key as stored: the UTF-8 bytes of its NFC form, so keys Swift considers equal share
    /// one row.
    func storedKey(_ key: String) -> Data {
        Data(key.nfcNormalized.utf8)
    }

    func now() -> Double {
        options.clock.now().timeIntervalSince1970
    }

    func expiry(timeToLive: Duration?, now: Double) -> Double? {
        (timeToLive ?? options.timeToLive).map { now + $0.timeInterval }
    }
}

extension PostgresStorage: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage, ExpiringStorage {}
#endif
