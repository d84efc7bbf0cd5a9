#if Hummingbird
public import Foundation
public import Hummingbird
public import Strata

/// Hummingbird's key-value persistence (`PersistDriver`) over any Strata storage of `Data` that
/// keeps lifetimes: a memory cache with limits, files on disk, SQLite, PostgreSQL, or a
/// `SharedCache` that many servers share.
///
/// ```swift
/// let sessions = MemoryStorage<String, Data>(maximumCount: 100_000)
/// let persist = StrataPersistDriver(sessions)
/// router.put("/notes/:id") { request, context -> HTTPResponse.Status in
///     let id = try context.parameters.require("id")
///     let text = String(buffer: try await request.body.collect(upTo: 64 * 1024))
///     try await persist.create(key: id, value: text, expires: .seconds(3600))
///     return .created
/// }
/// ```
///
/// Values are stored as JSON behind a short header that names their Swift type. The driver keeps
/// `PersistDriver`'s rules, as Hummingbird's own memory driver keeps them:
/// - `create` stores a value only if the key has none, in one atomic step of the storage
///   (`LifetimeStorage/update(forKey:lifetime:_:)`), and throws `PersistError.duplicate`
///   otherwise, also when two servers race on one PostgreSQL table;
/// - `expires: nil` means no expiry: `create` and a `set` of a new key store a value that never
///   expires, even in a storage made with a default time to live; a `set` that replaces a value
///   keeps the lifetime of the value it replaces;
/// - a stored value of another type than the one asked for is `PersistError.invalidConversion`
///   (`set(5)` read as a `Double`, or one struct read as another of the same shape), and stays
///   stored; so is a value that no longer decodes as its type;
/// - `getWithTTL` returns how long the value has left.
///
/// A type's name is part of what is stored: a value stored as a type that was since renamed or
/// moved to another module reads as `invalidConversion`. Data stored without the header (by
/// an earlier version, or by another program) is decoded by its shape.
///
/// Every other failure is the storage's `StorageError`, which answers a request with a
/// status of its own (`400` for a key the storage refuses, `503` when the storage timed out or
/// is closed, `500` otherwise) and never with the key or the value.
///
/// The driver owns nothing: close or shut down the storage where you made it. Any task may use
/// it.
public struct StrataPersistDriver<Base: LifetimeStorage>: PersistDriver
where Base.Key == String, Base.Value == Data {
    /// The storage the values live in.
    public let storage: Base

    /// Creates a driver over `storage`.
    public init(_ storage: Base) {
        self.storage = storage
    }

    /// What `create` throws inside the storage's update when the key already has a value.
    private struct KeyExists: Error {}

    /// Stores `value` for `key` unless the key has a live value, expiring after `expires`, or
    /// never for `nil`.
    ///
    /// - Throws: `PersistError.duplicate` when the key has a value; `StorageError`
    ///   (code `encodingFailed` for a value JSON cannot encode) otherwise.
    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let data = try encode(value, forKey: key)
        do {
            try await storage.update(forKey: key, lifetime: expires.map(Lifetime.remaining) ?? .unlimited) {
                (current: inout Data?) in
                guard current == nil else { throw KeyExists() }
                current = data
            }
        } catch {
            let keyExists = error.code == .updateAborted && error.underlying is KeyExists
            if keyExists { throw PersistError.duplicate }
            throw error
        }
    }

    /// Stores `value` for `key`, replacing any value. With `expires`, the value expires after it;
    /// without, it keeps the lifetime of the value it replaces, and a new one never expires.
    ///
    /// - Throws: `StorageError`.
    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let data = try encode(value, forKey: key)
        if let expires {
            try await storage.set(data, forKey: key, timeToLive: expires)
        } else {
            try await storage.setKeepingLifetime(data, forKey: key, orGiving: .unlimited)
        }
    }

    /// The value for `key` as an `Object`, or `nil` when there is none or it has expired.
    ///
    /// - Throws: `PersistError.invalidConversion` when the stored value is not an `Object`;
    ///   `StorageError` when the storage cannot be read.
    public func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        guard let data = try await storage.value(forKey: key) else { return nil }
        return try decode(data, as: type)
    }

    /// The value for `key` and how long it has left (`nil` for never), read together where the
    /// storage can (memory, PostgreSQL: one query).
    ///
    /// - Throws: as ``get(key:as:)``.
    public func getWithTTL<Object: Codable & Sendable>(
        key: String,
        as type: Object.Type
    ) async throws -> (object: Object, ttl: Duration?)? {
        guard let (data, lifetime) = try await storage.valueWithLifetime(forKey: key) else { return nil }
        let object = try decode(data, as: type)
        switch lifetime {
        case .unlimited: return (object, nil)
        case .remaining(let left): return (object, left)
        }
    }

    /// Removes the value for `key`; removing an absent key does nothing.
    ///
    /// - Throws: `StorageError`.
    public func remove(key: String) async throws {
        try await storage.removeValue(forKey: key)
    }

    private func encode(_ value: some Encodable, forKey key: String) throws(StorageError) -> Data {
        do {
            return try TypedJSON.encode(value)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .encodingFailed,
                key: key,
                storage: "StrataPersistDriver",
                message: "the value cannot be encoded as JSON; nothing was stored"
            )
        }
    }

    private func decode<Object: Decodable>(_ data: Data, as type: Object.Type) throws -> Object {
        let read: TypedJSON.Read<Object>
        do {
            read = try TypedJSON.decode(type, from: data)
        } catch {
            throw PersistError.invalidConversion
        }
        guard case .value(let object) = read else { throw PersistError.invalidConversion }
        return object
    }
}

extension StorageError: HTTPResponseError, ResponseGenerator {
    /// The status a request that met this error is answered with: `400 Bad Request` for a key
    /// the storage refuses, `503 Service Unavailable` for a storage that timed out, is closed or
    /// was cancelled, and `500 Internal Server Error` for anything else.
    public var status: HTTPResponse.Status {
        switch code {
        case .invalidKey: .badRequest
        case .timedOut, .closed, .cancelled: .serviceUnavailable
        default: .internalServerError
        }
    }

    /// A response with `status` and a body naming the error's code only: keys and values may
    /// be secrets (a session's id, say), so neither reaches the client.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try HTTPError(status, message: "storage error: \(code)").response(from: request, context: context)
    }
}
#endif
