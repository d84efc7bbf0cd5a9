/// The key and value types a storage deals in; refined by ``ReadableStorage`` and
/// ``WritableStorage``, so that one combinator serves read-only, write-only and read-write bases.
public protocol KeyValueStorage<Key, Value>: Sendable {
    /// The type that names a value.
    associatedtype Key: Sendable
    /// The type of the stored values.
    associatedtype Value: Sendable
}

/// A storage whose values can be read by key. Safe to call from any task.
public protocol ReadableStorage<Key, Value>: KeyValueStorage {
    /// The type that names a value, as in ``KeyValueStorage``.
    associatedtype Key
    /// The type of the stored values, as in ``KeyValueStorage``.
    associatedtype Value
    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// - Throws: ``StorageError`` when the value exists but cannot be read, such as
    ///   ``StorageError/Code/decodingFailed`` or ``StorageError/Code/io``. Absence is never an error.
    func value(forKey key: Key) async throws(StorageError) -> Value?

    /// Answers a read without suspending when this storage can, or says it cannot.
    ///
    /// Storages that answer from memory (``MemoryStorage``, ``WeakObjectCache``) return
    /// ``ImmediateLookup/found(_:)`` or
    /// ``ImmediateLookup/absent``; combinators pass the question down, so a chain over such a
    /// storage answers a hit with no suspension at each layer. The default answers
    /// ``ImmediateLookup/unavailable``: call ``value(forKey:)`` instead.
    func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value>

    /// Returns the values for `keys`, in the same order: `nil` where a key has no value.
    ///
    /// Storages that can read many values at once do it in one step: ``MemoryStorage`` under
    /// one lock per shard, `SQLiteStorage` and `PostgresStorage` in one statement,
    /// ``DiskStorage`` on several I/O threads at once. The default reads the keys one after
    /// another. A key given twice is read once per position.
    ///
    /// - Throws: ``StorageError``, as ``value(forKey:)`` does; the first failure fails the call.
    func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?]
}

/// The answer to ``ReadableStorage/immediateValue(forKey:)``.
@frozen
public enum ImmediateLookup<Value> {
    /// The storage holds this value.
    case found(Value)
    /// The storage holds no value for the key.
    case absent
    /// The storage cannot answer without suspending; ask ``ReadableStorage/value(forKey:)``.
    case unavailable

    /// Converts a found value with `transform`; absence and unavailability pass through.
    @inlinable
    public func map<NewValue>(
        _ transform: (Value) throws(StorageError) -> NewValue
    ) throws(StorageError) -> ImmediateLookup<NewValue> {
        switch self {
        case .found(let value): .found(try transform(value))
        case .absent: .absent
        case .unavailable: .unavailable
        }
    }

    /// Makes an answer from an optional: `found` for a value, `absent` for `nil`.
    @inlinable
    public init(_ value: Value?) {
        if let value { self = .found(value) } else { self = .absent }
    }
}

extension ImmediateLookup: Sendable where Value: Sendable {}
extension ImmediateLookup: Equatable where Value: Equatable {}

extension ReadableStorage {
    /// Answers ``ImmediateLookup/unavailable``: this storage must suspend to read.
    @inlinable
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        .unavailable
    }
}

/// A storage that values can be written to and removed from by key. Safe to call from any task.
public protocol WritableStorage<Key, Value>: KeyValueStorage {
    /// The type that names a value, as in ``KeyValueStorage``.
    associatedtype Key
    /// The type of the stored values, as in ``KeyValueStorage``.
    associatedtype Value
    /// Stores `value` for `key`, replacing any value already there.
    ///
    /// A cache may drop a value it cannot hold (for example one larger than its whole limit)
    /// without failing; a store throws instead.
    func set(_ value: Value, forKey key: Key) async throws(StorageError)

    /// Removes the value for `key`. Removing an absent key does nothing and does not throw.
    func removeValue(forKey key: Key) async throws(StorageError)

    /// Stores every value in `entries` under its key, in order, so a key given twice keeps the
    /// later value.
    ///
    /// Storages that can write many values at once do it in one step: ``MemoryStorage`` under
    /// one lock, `SQLiteStorage` in one transaction, `PostgresStorage` in one statement,
    /// ``DiskStorage`` on several I/O threads at once. The default writes the entries one after
    /// another. Only the database storages write all or nothing; elsewhere a failure leaves the
    /// entries written before it.
    ///
    /// - Throws: ``StorageError``, as ``set(_:forKey:)`` does; the first failure fails the call.
    func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError)
}

/// A storage that can be read and written by key. Safe to call from any task.
///
/// Take it generically (`some Storage<String, Data>`) where you can, so the optimizer sees
/// through a chain of combinators; `any Storage<String, Data>` holds any backend when you need a
/// heterogeneous list.
public protocol Storage<Key, Value>: ReadableStorage, WritableStorage {}

/// A storage that changes one key's value atomically: two concurrent updates never lose one
/// another.
public protocol UpdatableStorage<Key, Value>: Storage {
    /// Reads the value for `key`, lets `body` change it, and writes the result back as one atomic
    /// step; setting the value to `nil` removes it.
    ///
    /// `body` runs without any lock held. When another writer changes the same key while `body`
    /// runs, the storage discards `body`'s result and runs it again on the newer value, so `body`
    /// may run more than once and should have no side effects.
    ///
    /// A storage whose values expire keeps the lifetime of the value it changes (one stored for
    /// 10 s still expires 10 s after it was stored); a value the update creates gets the
    /// storage's default time to live.
    ///
    /// - Returns: What `body` returned on the run that was committed.
    /// - Throws: ``StorageError``; when `body` throws, code ``StorageError/Code/updateAborted``
    ///   with the error as ``StorageError/underlying``, and nothing is written.
    func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result
}

/// A storage that can list the keys it holds.
public protocol EnumerableStorage<Key, Value>: ReadableStorage {
    /// Returns every key that currently has a value, in no particular order.
    ///
    /// Expired values that have not been removed yet are not listed.
    func keys() async throws(StorageError) -> [Key]
}

/// A storage that can remove every value at once.
public protocol ClearableStorage<Key, Value>: WritableStorage {
    /// Removes every value.
    func removeAll() async throws(StorageError)
}

extension UpdatableStorage {
    /// Updates the value for `key`, starting from `defaultValue` when there is none.
    ///
    /// ```swift
    /// try await counters.update(forKey: "visits", default: 0) { $0 += 1 }
    /// ```
    @discardableResult
    public func update<Result>(
        forKey key: Key,
        default defaultValue: @autoclosure () -> Value,
        _ body: (inout Value) throws -> Result
    ) async throws(StorageError) -> Result {
        try await update(forKey: key) { (value: inout Value?) throws -> Result in
            var current = value ?? defaultValue()
            let result = try body(&current)
            value = current
            return result
        }
    }

    /// Stores `value` for `key`, keeping the lifetime of the value it replaces: a token stored
    /// for 10 s still expires 10 s after it was first stored. With no value to replace, the value
    /// gets the storage's default time to live, as with `set(_:forKey:)`.
    ///
    /// ```swift
    /// try await sessions.setKeepingLifetime(refreshed, forKey: "s1")
    /// ```
    public func setKeepingLifetime(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await update(forKey: key) { (current: inout Value?) in current = value }
    }
}

/// The name a storage reports in its errors: the type's name without generic arguments.
func storageName(of type: Any.Type) -> String {
    let name = String(describing: type)
    if let bracket = name.firstIndex(of: "<") {
        return String(name[..<bracket])
    }
    return name
}
