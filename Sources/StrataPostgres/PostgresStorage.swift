public import Foundation
import Logging
import NIOCore
import NIOSSL
public import PostgresNIO
public import Strata
import Synchronization

/// A storage of `Data` in a PostgreSQL table that many processes and machines share, over a
/// pool of connections.
///
/// Keys are stored as their UTF-8 bytes and found by their SHA-256 digest, so any key (SQL-looking,
/// NUL, 10 KB long) is stored verbatim; keys and values reach the server only as bound parameters.
/// A trigger on the table announces every change with `NOTIFY`, which ``SharedCache`` uses to keep
/// memory layers in several processes fresh.
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
    struct Counters {
        var hits: UInt64 = 0
        var misses: UInt64 = 0
        var writes: UInt64 = 0
    }

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
    private let runner: Task<Void, Never>?
    /// Whether the storage is closed, the operations in flight, and close() calls waiting for
    /// them to end.
    private let activity = LockedState(Activity())
    /// Set once the table is known to exist, for a storage over the app's client, which cannot
    /// look for it before the client runs: the first operation does.
    private let preparation: Preparation?
    private let counters = LockedState(Counters())
    let name = "PostgresStorage"
    let table: String
    private let server: String
    static let logger = Logger(label: "Strata.PostgresStorage", factory: { _ in SwiftLogNoOpLogHandler() })

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
        configuration.options.maximumConnections = max(1, options.maximumConnections)
        configuration.options.additionalStartupParameters.append(("application_name", instanceName))
        self.configuration = configuration
        self.options = options
        self.instanceName = instanceName
        self.observer = StorageObserver.make(
            storage: "PostgresStorage",
            logger: options.logger,
            metrics: options.metrics
        )
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
    private static func validate(_ options: Options) throws(StorageError) {
        guard Self.isValidTableName(options.table) else {
            throw StorageError(
                .invalidConfiguration,
                storage: "PostgresStorage",
                message:
                    "the table name '\(options.table)' is not lowercase letters, digits and underscores (at most 48)"
            )
        }
        if let timeToLive = options.timeToLive, timeToLive <= .zero {
            throw StorageError(
                .invalidConfiguration,
                storage: "PostgresStorage",
                message: "timeToLive must be positive, got \(timeToLive)"
            )
        }
        if let expiry = options.expiry,
            let problem = expiry.configurationProblem(withTimeToLive: options.timeToLive)
                ?? expiry.problemWithoutReadRules(in: "PostgresStorage")
        {
            throw StorageError(.invalidConfiguration, storage: "PostgresStorage", message: problem)
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
    private func prepareTable() async throws(StorageError) {
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
    /// ``Options/maximumConnections`` do not apply. A ``SharedCache`` over this storage cannot
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
    /// - Throws: `StorageError.Code.invalidConfiguration` for a table name or time to live it
    ///   cannot use. Errors reaching the server come from the first operation, as from
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
    private struct Activity {
        var isClosed = false
        var inFlight = 0
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    /// The first operation's check for the table, made once.
    private final class Preparation: Sendable {
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
    private func begin() -> Bool {
        activity.withLock { activity in
            guard !activity.isClosed else { return false }
            activity.inFlight += 1
            return true
        }
    }

    /// Counts an operation out, resuming close() calls once none is left.
    private func end() {
        let drained = activity.withLock { activity -> [CheckedContinuation<Void, Never>] in
            activity.inFlight -= 1
            guard activity.isClosed, activity.inFlight == 0 else { return [] }
            defer { activity.drained = [] }
            return activity.drained
        }
        for continuation in drained { continuation.resume() }
    }

    // MARK: Configuration

    static func isValidTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48 else { return false }
        let isLetter = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        return isLetter(first)
            && name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// Parses a `postgres://` URL into a client configuration.
    public static func configuration(from url: String) throws(StorageError) -> PostgresClient.Configuration {
        func invalid(_ message: String) -> StorageError {
            StorageError(.invalidConfiguration, storage: "PostgresStorage", message: message)
        }
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw invalid("'\(url)' is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw invalid("'\(url)' names no host")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        let rootCertificate = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value
        guard let security = TransportSecurity(mode: mode, rootCertificate: rootCertificate) else {
            throw invalid(
                "unknown sslmode '\(mode)' in '\(url)' (use disable, allow, prefer, require, verify-ca or verify-full)"
            )
        }
        let tls: PostgresClient.Configuration.TLS
        switch security.policy {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(security.tlsConfiguration)
        case .require: tls = .require(security.tlsConfiguration)
        }
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
    }

    /// What libpq's `sslmode` asks of the connection, with the certificate checks it implies.
    struct TransportSecurity {
        enum Policy { case disable, prefer, require }

        var policy: Policy
        /// How the server's certificate is checked: not at all (`allow`, `prefer`, `require`),
        /// its chain (`verify-ca`), its chain and host name (`verify-full`).
        var verification: CertificateVerification
        /// Where trusted roots come from: `sslrootcert`'s file, else the system's.
        var trustRoots: NIOSSLTrustRoots

        /// The security `mode` names, or `nil` for a mode libpq does not have. As in libpq,
        /// `require` with a root certificate checks the chain, as `verify-ca` does.
        init?(mode: String, rootCertificate: String?) {
            trustRoots = rootCertificate.map { .file($0) } ?? .default
            switch mode {
            case "disable": (policy, verification) = (.disable, .none)
            case "allow", "prefer": (policy, verification) = (.prefer, .none)
            case "require":
                (policy, verification) = (.require, rootCertificate == nil ? .none : .noHostnameVerification)
            case "verify-ca": (policy, verification) = (.require, .noHostnameVerification)
            case "verify-full": (policy, verification) = (.require, .fullVerification)
            default: return nil
            }
        }

        var tlsConfiguration: TLSConfiguration {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = verification
            configuration.trustRoots = trustRoots
            return configuration
        }
    }

    // MARK: Running operations

    /// Runs `operation` on a pooled connection within ``Options/operationTimeout``, turning every
    /// failure into a `StorageError`.
    @discardableResult
    func perform<Value: Sendable>(
        _ action: String,
        key: String?,
        _ operation: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws(StorageError) -> Value {
        guard begin() else {
            throw StorageError(.closed, key: key, storage: name, message: "the storage was closed")
        }
        defer { end() }
        if let preparation, !preparation.isDone.load(ordering: .acquiring) {
            try await prepare(preparation)
        }
        return try await performPrepared(action, key: key, operation)
    }

    /// Creates or finds the table for a storage over the app's client, once; a failure is
    /// thrown to the operation that waited for it, and the next operation tries again.
    private func prepare(_ preparation: Preparation) async throws(StorageError) {
        await preparation.mutex.lock()
        defer { preparation.mutex.unlock() }
        guard !preparation.isDone.load(ordering: .acquiring) else { return }
        try await prepareTable()
        preparation.isDone.store(true, ordering: .releasing)
    }

    /// `perform(_:key:_:)` once the operation is counted in and the table prepared.
    private func performPrepared<Value: Sendable>(
        _ action: String,
        key: String?,
        _ operation: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws(StorageError) -> Value {
        let client = client
        let timeout = options.operationTimeout
        let leased = Flag()
        let outcome = await Deadline.race(within: timeout) { () async throws -> Value in
            try await client.withConnection { connection in
                leased.set()
                return try await operation(connection)
            }
        }
        switch outcome {
        case .value(let value):
            return value
        case .failure(let error):
            throw mapError(error, key: key, action)
        case .cancelled:
            throw StorageError(.cancelled, key: key, storage: name, message: "\(action): the task was cancelled")
        case .timedOut where !leased.isSet:
            throw StorageError(
                .io,
                key: key,
                storage: name,
                message: "\(action): no connection to PostgreSQL at \(server) within \(timeout); the server may be down"
            )
        case .timedOut:
            throw StorageError(
                .timedOut,
                key: key,
                storage: name,
                message: "\(action): PostgreSQL at \(server) did not answer within \(timeout)"
            )
        }
    }

    /// Turns a PostgresNIO error into a `StorageError`, keeping the server's message.
    func mapError(_ error: any Error, key: String?, _ action: String) -> StorageError {
        if let error = error as? StorageError { return error }
        if isClosed {
            return StorageError(.closed, key: key, storage: name, message: "the storage was closed", underlying: error)
        }
        if let error = error as? UpdateBodyFailed {
            return StorageError.wrapping(
                error.error,
                as: .updateAborted,
                key: key,
                storage: name,
                message: "the update closure threw; nothing was written"
            )
        }
        if let error = error as? PostgresTransactionError,
            let cause = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
        {
            return mapError(cause, key: key, action)
        }
        if let error = error as? PSQLError {
            if error.code == .server, let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                let message = info[.message] ?? "no message"
                return StorageError(
                    .io,
                    key: key,
                    storage: name,
                    message: "\(action): the server refused (SQLSTATE \(state)): \(message)",
                    underlying: error
                )
            }
            if error.code == .poolClosed {
                return StorageError(.closed, key: key, storage: name, message: "the pool was closed", underlying: error)
            }
            return StorageError(
                .io,
                key: key,
                storage: name,
                message: "\(action): the connection to PostgreSQL at \(server) failed (\(error.code))",
                underlying: error
            )
        }
        return StorageError.wrapping(error, as: .io, key: key, storage: name, message: action)
    }

    // MARK: Schema

    /// Fails with `notFound` unless the table exists.
    private func requireTable() async throws(StorageError) {
        let table = table
        let exists = try await performPrepared("cannot look for the table \(table)", key: nil) { connection in
            let rows = try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: Self.logger)
            for try await exists in rows.decode(Bool.self) { return exists }
            return false
        }
        guard exists else {
            throw StorageError(
                .notFound,
                storage: name,
                message: "there is no table \(table) at \(server): nothing was read or created"
            )
        }
    }

    private func createTable() async throws(StorageError) {
        let table = table
        let channel = channel
        try await performPrepared("cannot create the table \(table)", key: nil) { connection in
            try await connection.withTransaction(logger: Self.logger) { connection in
                // Serializes schema changes between processes opening the same table at once.
                try await connection.query(
                    "SELECT pg_advisory_xact_lock(hashtext(\(table)))",
                    logger: Self.logger
                )
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                        digest BYTEA PRIMARY KEY,
                        key BYTEA NOT NULL,
                        value BYTEA NOT NULL,
                        expiry DOUBLE PRECISION
                    )
                    """,
                    logger: Self.logger
                )
                try await connection.query(
                    """
                    CREATE INDEX IF NOT EXISTS \(unescaped: table)_expiry ON \(unescaped: table) (expiry)
                    WHERE expiry IS NOT NULL
                    """,
                    logger: Self.logger
                )
                // Announces each change as "<application_name> k<base64 key>", or "<name> *" for
                // every key (TRUNCATE, or a key too long for a notification's 8000 bytes).
                try await connection.query(
                    """
                    CREATE OR REPLACE FUNCTION \(unescaped: table)_notify() RETURNS trigger
                    LANGUAGE plpgsql AS $$
                    DECLARE
                        changed BYTEA;
                        sender TEXT := coalesce(current_setting('application_name', true), '');
                    BEGIN
                        IF TG_OP = 'TRUNCATE' THEN
                            PERFORM pg_notify('\(unescaped: channel)', sender || ' *');
                            RETURN NULL;
                        END IF;
                        IF TG_OP = 'DELETE' THEN changed := OLD.key; ELSE changed := NEW.key; END IF;
                        IF octet_length(changed) > 5000 THEN
                            PERFORM pg_notify('\(unescaped: channel)', sender || ' *');
                        ELSE
                            PERFORM pg_notify('\(unescaped: channel)', sender || ' k' || encode(changed, 'base64'));
                        END IF;
                        RETURN NULL;
                    END
                    $$
                    """,
                    logger: Self.logger
                )
                try await connection.query(
                    """
                    CREATE OR REPLACE TRIGGER \(unescaped: table)_changed
                    AFTER INSERT OR UPDATE OR DELETE ON \(unescaped: table)
                    FOR EACH ROW EXECUTE FUNCTION \(unescaped: table)_notify()
                    """,
                    logger: Self.logger
                )
                try await connection.query(
                    """
                    CREATE OR REPLACE TRIGGER \(unescaped: table)_truncated
                    AFTER TRUNCATE ON \(unescaped: table)
                    FOR EACH STATEMENT EXECUTE FUNCTION \(unescaped: table)_notify()
                    """,
                    logger: Self.logger
                )
            }
        }
    }

    // MARK: Keys and time

    /// The key as stored: the UTF-8 bytes of its NFC form, so keys Swift considers equal share
    /// one row.
    func storedKey(_ key: String) -> Data {
        Data((key.utf8.allSatisfy { $0 < 0xCC } ? key : key.precomposedStringWithCanonicalMapping).utf8)
    }

    func now() -> Double {
        options.clock.now().timeIntervalSince1970
    }

    func expiry(timeToLive: Duration?, now: Double) -> Double? {
        (timeToLive ?? options.timeToLive).map { now + $0.timeInterval }
    }

    // MARK: Reading

    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// - Throws: `StorageError` code `StorageError.Code.io` when the server cannot be
    ///   reached or fails, `StorageError.Code.timedOut` when it answers too slowly,
    ///   `StorageError.Code.closed` after ``close()``.
    public func value(forKey key: String) async throws(StorageError) -> Data? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let value = try await perform("cannot read", key: key) { connection -> Data? in
            let rows = try await connection.query(
                """
                SELECT value FROM \(unescaped: table)
                WHERE digest = sha256(\(stored)) AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            for try await (value) in rows.decode(Data.self) {
                return value
            }
            return nil
        }
        counters.withLock { counters in
            if value == nil {
                counters.misses &+= 1
            } else {
                counters.hits &+= 1
            }
        }
        return value
    }

    /// The live value for `key` and how long it has left, in one query, or `nil`.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func valueWithLifetime(forKey key: String) async throws(StorageError) -> (value: Data, lifetime: Lifetime)? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let row = try await perform("cannot read", key: key) { connection -> (Data, Double?)? in
            let rows = try await connection.query(
                """
                SELECT value, expiry FROM \(unescaped: table)
                WHERE digest = sha256(\(stored)) AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            for try await (value, expiry) in rows.decode((Data, Double?).self) {
                return (value, expiry)
            }
            return nil
        }
        counters.withLock { counters in
            if row == nil { counters.misses &+= 1 } else { counters.hits &+= 1 }
        }
        guard let (value, expiry) = row, let lifetime = Lifetime(expiry: expiry ?? .infinity, now: now) else {
            return nil
        }
        return (value, lifetime)
    }

    /// Returns the values for `keys`, in the same order, `nil` where a key has none, in one
    /// query.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func values(forKeys keys: [String]) async throws(StorageError) -> [Data?] {
        let stored = keys.map { ByteBuffer(bytes: storedKey($0)) }
        let now = now()
        let table = table
        let found = try await perform("cannot read \(keys.count) values", key: nil) { connection in
            let rows = try await connection.query(
                """
                SELECT key, value FROM \(unescaped: table)
                WHERE digest IN (SELECT sha256(k) FROM unnest(\(stored)::bytea[]) AS k)
                AND (expiry IS NULL OR expiry > \(now))
                """,
                logger: Self.logger
            )
            var found: [ByteBuffer: Data] = [:]
            for try await (key, value) in rows.decode((ByteBuffer, Data).self) {
                found[key] = value
            }
            return found
        }
        let values = stored.map { found[$0] }
        let hits = values.count(where: { $0 != nil })
        counters.withLock { counters in
            counters.hits &+= UInt64(hits)
            counters.misses &+= UInt64(keys.count - hits)
        }
        return values
    }

    /// Returns every key with a value that has not expired, in no particular order.
    public func keys() async throws(StorageError) -> [String] {
        let now = now()
        let table = table
        return try await perform("cannot list keys", key: nil) { connection in
            let rows = try await connection.query(
                "SELECT key FROM \(unescaped: table) WHERE expiry IS NULL OR expiry > \(now)",
                logger: Self.logger
            )
            var keys: [String] = []
            for try await key in rows.decode(Data.self) {
                keys.append(String(decoding: key, as: UTF8.self))
            }
            return keys
        }
    }

    /// A snapshot of the table's totals (one scan) and this instance's counters.
    public func statistics() async throws(StorageError) -> Statistics {
        let table = table
        let totals = try await perform("cannot count values", key: nil) { connection -> (Int, Int) in
            let rows = try await connection.query(
                """
                SELECT count(*)::bigint, coalesce(sum(octet_length(key) + octet_length(value)), 0)::bigint
                FROM \(unescaped: table)
                """,
                logger: Self.logger
            )
            for try await (count, bytes) in rows.decode((Int, Int).self) {
                return (count, bytes)
            }
            return (0, 0)
        }
        let counters = counters.withLock { $0 }
        var statistics = Statistics()
        (statistics.count, statistics.byteCount) = totals
        statistics.hits = counters.hits
        statistics.misses = counters.misses
        statistics.writes = counters.writes
        return statistics
    }

    /// How long the value for `key` has left: `Lifetime.unlimited`, `Lifetime.remaining(_:)`, or
    /// `nil` when there is no live value. Does not count as a use.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func lifetime(forKey key: String) async throws(StorageError) -> Lifetime? {
        let stored = storedKey(key)
        let now = now()
        let table = table
        let expiry = try await perform("cannot read the lifetime", key: key) { connection -> Double?? in
            let rows = try await connection.query(
                "SELECT expiry FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                logger: Self.logger
            )
            for try await (expiry) in rows.decode(Double?.self) {
                return .some(expiry)
            }
            return .none
        }
        guard let expiry else { return nil }
        return Lifetime(expiry: expiry ?? .infinity, now: now)
    }

    // MARK: Writing

    /// Stores `value` for `key` with the default time to live. When this returns, the write is
    /// committed.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func set(_ value: Data, forKey key: String) async throws(StorageError) {
        try await set(value, forKey: key, timeToLive: nil)
    }

    /// Stores `value` for `key`, expiring after `timeToLive` (or the default when `nil`).
    ///
    /// - Throws: as ``value(forKey:)``.
    ///
    /// A `timeToLive` of zero or less has already run out, as on every storage of Strata: the
    /// value is not stored, and the older value for `key` is removed.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            try await removeValue(forKey: key)
            return
        }
        let stored = storedKey(key)
        let now = now()
        var expiry = expiry(timeToLive: timeToLive, now: now)
        if timeToLive == nil, let rules = options.expiry {
            if rules.hasUpdateRule {
                // The rule needs the old value's lifetime: read and write under the key's lock.
                _ = try await updateReportingExpiry(forKey: key, timeToLive: nil) { $0 = value }
                return
            }
            guard let ruled = rules.expiry(of: value, forKey: key, replacing: nil, now: now) else {
                try await removeValue(forKey: key)
                return
            }
            expiry = ruled.isFinite ? ruled : nil
        }
        let table = table
        try await perform("cannot write", key: key) { [expiry] connection in
            guard expiry != nil else {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                    VALUES (sha256(\(stored)), \(stored), \(value), NULL)
                    ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                    """,
                    logger: Self.logger
                )
                return
            }
            // A value with a lifetime removes up to two expired ones in the same statement (one
            // round trip), skipping rows another writer holds, so a table written and never read
            // stays near what is alive.
            try await connection.query(
                """
                WITH swept AS (
                    DELETE FROM \(unescaped: table) WHERE digest IN (
                        SELECT digest FROM \(unescaped: table)
                        WHERE expiry <= \(now) AND digest <> sha256(\(stored))
                        ORDER BY expiry LIMIT 2 FOR UPDATE SKIP LOCKED
                    )
                )
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                VALUES (sha256(\(stored)), \(stored), \(value), \(expiry))
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.withLock { $0.writes &+= 1 }
    }

    /// Stores every value in `entries` with the storage's default lifetime, in one statement:
    /// all are written or none. A key given twice keeps the later value.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func setValues(_ entries: [(key: String, value: Data)]) async throws(StorageError) {
        try await setValues(Dictionary(entries, uniquingKeysWith: { _, later in later }), timeToLive: nil)
    }

    /// Stores every value in `values` in one statement: all are written or none.
    ///
    /// - Throws: as ``value(forKey:)``.
    ///
    /// A `timeToLive` of zero or less removes the keys' values instead, as ``set(_:forKey:timeToLive:)``.
    public func setValues(_ values: [String: Data], timeToLive: Duration? = nil) async throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            for key in values.keys { try await removeValue(forKey: key) }
            return
        }
        if timeToLive == nil, let rules = options.expiry {
            try await setValues(values, by: rules)
            return
        }
        var rows: [Data: Data] = [:]
        for (key, value) in values {
            rows[storedKey(key)] = value
        }
        let keys = rows.keys.map { ByteBuffer(bytes: $0) }
        let payloads = rows.values.map { ByteBuffer(bytes: $0) }
        let expiry = expiry(timeToLive: timeToLive, now: now())
        let table = table
        try await perform("cannot write \(rows.count) values", key: nil) { connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                SELECT sha256(k), k, v, \(expiry)::double precision
                FROM unnest(\(keys)::bytea[], \(payloads)::bytea[]) AS batch (k, v)
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.withLock { $0.writes &+= UInt64(rows.count) }
    }

    /// Stores `values` with the lifetimes `rules` give them: in one statement, which also removes
    /// the keys whose lifetime has already run out, or, with an `afterUpdate` rule, one update
    /// per value.
    private func setValues(_ values: [String: Data], by rules: Expiry<String, Data>) async throws(StorageError) {
        if rules.hasUpdateRule {
            for (key, value) in values {
                _ = try await updateReportingExpiry(forKey: key, timeToLive: nil) { $0 = value }
            }
            return
        }
        let now = now()
        var keys: [ByteBuffer] = []
        var payloads: [ByteBuffer] = []
        var expiries: [Double] = []
        var gone: [ByteBuffer] = []
        for (key, value) in values {
            let stored = ByteBuffer(bytes: storedKey(key))
            // Never is written as infinity here, and stored as NULL.
            guard let expiry = rules.expiry(of: value, forKey: key, replacing: nil, now: now) else {
                gone.append(stored)
                continue
            }
            keys.append(stored)
            payloads.append(ByteBuffer(bytes: value))
            expiries.append(expiry)
        }
        let table = table
        try await perform("cannot write \(values.count) values", key: nil) {
            [keys, payloads, expiries, gone] connection in
            try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM \(unescaped: table)
                    WHERE digest IN (SELECT sha256(g) FROM unnest(\(gone)::bytea[]) AS removed (g))
                )
                INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                SELECT sha256(k), k, v, NULLIF(e, 'Infinity'::double precision)
                FROM unnest(\(keys)::bytea[], \(payloads)::bytea[], \(expiries)::double precision[]) AS batch (k, v, e)
                ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = excluded.expiry
                """,
                logger: Self.logger
            )
        }
        counters.withLock { $0.writes &+= UInt64(keys.count) }
    }

    /// Removes the value for `key`, if any. When this returns, the removal is committed.
    ///
    /// - Throws: as ``value(forKey:)``.
    public func removeValue(forKey key: String) async throws(StorageError) {
        let stored = storedKey(key)
        let table = table
        try await perform("cannot remove", key: key) { connection in
            try await connection.query(
                "DELETE FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                logger: Self.logger
            )
        }
    }

    /// Removes every value (`TRUNCATE`; other processes' ``SharedCache``s drop everything).
    public func removeAll() async throws(StorageError) {
        let table = table
        try await perform("cannot remove every value", key: nil) { connection in
            try await connection.query("TRUNCATE \(unescaped: table)", logger: Self.logger)
        }
    }

    /// Removes every expired value; returns how many.
    @discardableResult
    public func removeExpired() async throws(StorageError) -> Int {
        let now = now()
        let table = table
        return try await perform("cannot remove expired values", key: nil) { connection in
            let rows = try await connection.query(
                "WITH gone AS (DELETE FROM \(unescaped: table) WHERE expiry <= \(now) RETURNING 1) SELECT count(*)::bigint FROM gone",
                logger: Self.logger
            )
            for try await count in rows.decode(Int.self) {
                return count
            }
            return 0
        }
    }

    /// Reads the value for `key`, lets `body` change it, and writes the result back in one
    /// transaction that holds a lock on the key, so concurrent updates from any process never lose
    /// one another; setting the value to `nil` removes it.
    ///
    /// `body` runs once, while the key's lock is held: keep it short, and do not use this
    /// storage's same key from inside it.
    ///
    /// - Throws: `StorageError.Code.updateAborted` when `body` throws (the transaction is rolled
    ///   back), or any error of ``value(forKey:)``.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await updateReportingExpiry(forKey: key, timeToLive: nil, body).result
    }

    /// ``update(forKey:_:)``, giving the value `body` leaves a time to live of its own: with one,
    /// the value expires after it whether it is new or replaces one (zero or less removes the key);
    /// with `nil`, a replaced value keeps its lifetime and a new one gets the default.
    ///
    /// - Throws: as ``update(forKey:_:)``.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await updateReportingExpiry(forKey: key, timeToLive: timeToLive, body).result
    }

    /// ``update(forKey:timeToLive:_:)``, also returning the expiry (seconds since 1970, on the
    /// storage's clock) of the value it wrote, whose `nil` inside means never, or `nil` when it
    /// removed the key. ``SharedCache`` keeps the value in memory no longer than that.
    func updateReportingExpiry<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) async throws(StorageError) -> (result: Result, expiry: Double??) {
        let stored = storedKey(key)
        let now = now()
        let expiry = expiry(timeToLive: timeToLive, now: now)
        // Without a time to live of its own, a value that replaces a live one keeps its expiry,
        // unless rules work one out.
        let rules = timeToLive == nil ? options.expiry : nil
        let keepsExpiry = timeToLive == nil && rules == nil
        let runOut = timeToLive.map { $0 <= .zero } ?? false
        let table = table
        let lock = Int64(bitPattern: stableHash(stored))
        // The transaction runs in a child task (under the time limit) and hands the current value
        // here; `body` runs in this task, which is not Sendable, and sends back what to write.
        let (currentValues, currentValue) = AsyncStream<UpdateStep>.makeStream()
        let (decisions, decide) = AsyncStream<UpdateStep>.makeStream()
        async let transaction: Double?? = {
            defer { currentValue.finish() }
            return try await perform("cannot update", key: key) { connection -> Double?? in
                try await connection.withTransaction(logger: Self.logger) { connection -> Double?? in
                    try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: Self.logger)
                    let rows = try await connection.query(
                        """
                        SELECT value, expiry FROM \(unescaped: table)
                        WHERE digest = sha256(\(stored)) AND (expiry IS NULL OR expiry > \(now))
                        """,
                        logger: Self.logger
                    )
                    var value: Data?
                    var liveExpiry: Double?
                    for try await (current, currentExpiry) in rows.decode((Data, Double?).self) {
                        value = current
                        liveExpiry = currentExpiry ?? .infinity
                    }
                    currentValue.yield(.value(value))
                    var iterator = decisions.makeAsyncIterator()
                    guard case .value(let newValue)? = await iterator.next() else {
                        throw UpdateBodyFailed(error: CancellationError())
                    }
                    var expiry = expiry
                    var runOut = runOut
                    if let rules, let newValue {
                        if let ruled = rules.expiry(of: newValue, forKey: key, replacing: liveExpiry, now: now) {
                            expiry = ruled.isFinite ? ruled : nil
                        } else {
                            runOut = true
                        }
                    }
                    if let newValue, !runOut {
                        let written = try await connection.query(
                            """
                            INSERT INTO \(unescaped: table) (digest, key, value, expiry)
                            VALUES (sha256(\(stored)), \(stored), \(newValue), \(expiry))
                            ON CONFLICT (digest) DO UPDATE SET value = excluded.value, expiry = CASE
                                WHEN \(keepsExpiry)
                                    AND (\(unescaped: table).expiry IS NULL OR \(unescaped: table).expiry > \(now))
                                THEN \(unescaped: table).expiry ELSE excluded.expiry END
                            RETURNING expiry
                            """,
                            logger: Self.logger
                        )
                        var kept: Double?
                        for try await (writtenExpiry) in written.decode(Double?.self) { kept = writtenExpiry }
                        return .some(kept)
                    } else {
                        try await connection.query(
                            "DELETE FROM \(unescaped: table) WHERE digest = sha256(\(stored))",
                            logger: Self.logger
                        )
                        return .none
                    }
                }
            }
        }()
        var result: Result?
        var bodyError: (any Error)?
        var iterator = currentValues.makeAsyncIterator()
        if case .value(var value)? = await iterator.next() {
            do {
                result = try body(&value)
                decide.yield(.value(value))
            } catch {
                bodyError = error
                decide.yield(.abort)
            }
        }
        decide.finish()
        let writtenExpiry: Double??
        do {
            writtenExpiry = try await transaction
        } catch {
            if let bodyError {
                throw StorageError.wrapping(
                    bodyError,
                    as: .updateAborted,
                    key: key,
                    storage: name,
                    message: "the update closure threw; nothing was written"
                )
            }
            throw mapError(error, key: key, "cannot update")
        }
        guard let result else {
            preconditionFailure("update(forKey:_:) committed without running its body")
        }
        counters.withLock { $0.writes &+= 1 }
        return (result, writtenExpiry)
    }

    /// A 64-bit FNV-1a hash of the key's bytes, the same in every process: the advisory lock's id.
    private func stableHash(_ bytes: Data) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// What passes between `update(forKey:_:)` and its transaction: the current value, then the value
/// to write (`nil` removes), or `abort` when the body threw.
enum UpdateStep: Sendable {
    case value(Data?)
    case abort
}

/// What `update(forKey:_:)` throws inside its transaction when the body throws.
struct UpdateBodyFailed: Error {
    var error: any Error
}

extension PostgresStorage: UpdatableStorage, LifetimeStorage, EnumerableStorage, ClearableStorage, ExpiringStorage {}
