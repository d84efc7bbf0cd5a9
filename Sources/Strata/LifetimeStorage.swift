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

    /// ``UpdatableStorage/update(forKey:_:)``, giving the value `body` leaves a time to live of
    /// its own.
    ///
    /// With a `timeToLive`, the written value expires after it, whether it is new or replaces
    /// one (zero or less removes the key instead); with `nil`, a replaced value keeps its
    /// lifetime and a new one gets the storage's default, as ``UpdatableStorage/update(forKey:_:)``
    /// does. Setting the value to `nil` removes it either way.
    ///
    /// - Returns: What `body` returned on the run that was committed.
    /// - Throws: ``StorageError``; when `body` throws, code ``StorageError/Code/updateAborted``
    ///   with the error as ``StorageError/underlying``, and nothing is written.
    func update<Result>(
        forKey key: Key,
        timeToLive: Duration?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result

    /// The live value for `key` and how long it has left, or `nil` when there is none.
    ///
    /// Memory and PostgreSQL read both at once; the default reads the value, then its lifetime,
    /// and answers `nil` when the value went away in between.
    func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)?
}

extension LifetimeStorage {
    /// Reads the value, then its lifetime; `nil` when either is gone.
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        guard let value = try await value(forKey: key), let lifetime = try await lifetime(forKey: key) else {
            return nil
        }
        return (value, lifetime)
    }
}
