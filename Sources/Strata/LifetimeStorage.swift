/// A storage that gives each value its own lifetime: it stores a value for a time to live,
/// updates a value atomically while setting its time to live, and says how long a value has
/// left.
///
/// ``MemoryStorage``, ``DiskStorage`` and the SQLite and PostgreSQL storages conform, as does
/// `SharedCache`. Framework adapters (a Hummingbird `PersistDriver`, a Vapor `Cache`) take one,
/// since their APIs give each value an expiry:
///
/// ```swift
/// func remember(_ token: Data, in sessions: some LifetimeStorage<String, Data>) async throws {
///     // Stored only if absent, for 15 minutes, in one atomic step.
///     try await sessions.update(forKey: "session-1", timeToLive: .seconds(900)) { value in
///         if value == nil { value = token }
///     }
///     print(try await sessions.lifetime(forKey: "session-1") as Any)  // remaining(900 seconds)
/// }
/// ```
public protocol LifetimeStorage<Key, Value>: UpdatableStorage {
    /// Stores `value` for `key`, expiring after `timeToLive`, or after the storage's default
    /// time to live when `nil` (never, for a storage without one). A time to live of zero or
    /// less has already run out: nothing is stored and the older value is removed.
    func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError)

    /// How long the value for `key` has left: ``Lifetime/unlimited``,
    /// ``Lifetime/remaining(_:)``, or `nil` when there is no live value. Does not count as a use.
    func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime?

    /// ``UpdatableStorage/update(forKey:_:)``, giving the value `body` leaves a lifetime of its
    /// own.
    ///
    /// With a `lifetime`, the written value gets it whether it is new or replaces one:
    /// ``Lifetime/unlimited`` never expires, whatever the storage's default time to live, and
    /// ``Lifetime/remaining(_:)`` expires after that long (zero or less removes the key instead).
    /// With `nil`, a replaced value keeps its lifetime and a new one gets the storage's default,
    /// as ``UpdatableStorage/update(forKey:_:)`` does. Setting the value to `nil` removes it
    /// either way.
    ///
    /// ```swift
    /// func keepForever(_ token: Data, in sessions: some LifetimeStorage<String, Data>) async throws {
    ///     // Stored only if absent, never to expire, even in a storage whose values live an hour.
    ///     try await sessions.update(forKey: "install-id", lifetime: .unlimited) { value in
    ///         if value == nil { value = token }
    ///     }
    /// }
    /// ```
    ///
    /// - Returns: What `body` returned on the run that was committed.
    /// - Throws: ``StorageError``; when `body` throws, code ``StorageError/Code/updateAborted``
    ///   with the error as ``StorageError/underlying``, and nothing is written.
    func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result

    /// The live value for `key` and how long it has left, or `nil` when there is none.
    ///
    /// Memory and PostgreSQL read both at once; the default reads the value, then its lifetime,
    /// and answers `nil` when the value went away in between.
    func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)?
}

extension LifetimeStorage {
    /// `update(forKey:lifetime:_:)` with a time to live: with one, the written value expires
    /// after it whether it is new or replaces one (zero or less removes the key instead); with
    /// `nil`, a replaced value keeps its lifetime and a new one gets the storage's default.
    ///
    /// - Returns: What `body` returned on the run that was committed.
    /// - Throws: ``StorageError``; when `body` throws, code ``StorageError/Code/updateAborted``
    ///   with the error as ``StorageError/underlying``, and nothing is written.
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        timeToLive: Duration?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// Stores `value` for `key`, keeping the lifetime of a live value it replaces; with none to
    /// replace, the value gets `newLifetime` (``Lifetime/unlimited``: it never expires, whatever
    /// the storage's default).
    ///
    /// Each attempt is one atomic update; the write takes effect at the one that succeeds, so a
    /// concurrent write or removal never makes it keep a lifetime that was not current.
    ///
    /// ```swift
    /// try await sessions.setKeepingLifetime(refreshed, forKey: "s1", orGiving: .unlimited)
    /// ```
    public func setKeepingLifetime(
        _ value: Value,
        forKey key: Key,
        orGiving newLifetime: Lifetime
    ) async throws(StorageError) {
        while true {
            // First as a new value, with `newLifetime`; when one is there, as a replacement that
            // keeps its lifetime; when that one went away in between, again.
            do throws(StorageError) {
                try await update(forKey: key, lifetime: newLifetime) { (current: inout Value?) throws -> Void in
                    guard current == nil else { throw KeyPresence.present }
                    current = value
                }
                return
            } catch  where error.code == .updateAborted && error.underlying as? KeyPresence == .present {}
            do throws(StorageError) {
                try await update(forKey: key, lifetime: nil) { (current: inout Value?) throws -> Void in
                    guard current != nil else { throw KeyPresence.absent }
                    current = value
                }
                return
            } catch  where error.code == .updateAborted && error.underlying as? KeyPresence == .absent {}
        }
    }

    /// Stores `value` for `key` with `lifetime`: ``Lifetime/unlimited`` never expires, whatever
    /// the storage's default time to live; ``Lifetime/remaining(_:)`` is
    /// `set(_:forKey:timeToLive:)`.
    public func set(_ value: Value, forKey key: Key, lifetime: Lifetime) async throws(StorageError) {
        switch lifetime {
        case .remaining(let timeToLive):
            try await set(value, forKey: key, timeToLive: timeToLive)
        case .unlimited:
            try await update(forKey: key, lifetime: .unlimited) { $0 = value }
        }
    }

    /// Reads the value, then its lifetime; `nil` when either is gone.
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        guard let value = try await value(forKey: key), let lifetime = try await lifetime(forKey: key) else {
            return nil
        }
        return (value, lifetime)
    }
}

/// What a step of ``LifetimeStorage/setKeepingLifetime(_:forKey:orGiving:)`` throws to write
/// nothing: the key has a value, or has none.
private enum KeyPresence: Error {
    case present, absent
}
