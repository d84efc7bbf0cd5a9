#if Vapor
public import Foundation
public import NIOCore
public import NIOHTTP1
public import Strata
public import Vapor

/// Vapor's `Cache` over any Strata storage of `Data` that keeps lifetimes: a memory cache that
/// stays inside its limits and expires on time (Vapor's own `.memory` cache has neither), files
/// on disk, SQLite, PostgreSQL, or a `SharedCache` that many servers share.
///
/// Install it with `app.caches.use(.strata(storage))` and use Vapor's API:
///
/// ```swift
/// app.caches.use(.strata(MemoryStorage<String, Data>(maximumCount: 10_000)))
/// app.get("greeting") { request async throws -> String in
///     if let cached = try await request.cache.get("greeting", as: String.self) { return cached }
///     try await request.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
///     return "hello"
/// }
/// ```
///
/// Values are stored as JSON behind a short header that names their Swift type, and the cache
/// keeps the rules of Vapor's own `.memory` cache: `set(_:to:expiresIn:)` gives the value that
/// lifetime, and without one the value never expires (even in a storage made with a default time
/// to live); setting `nil` removes the key; a value stored as another type reads as `nil`
/// (`set(5)` read as a `Double`, or one struct read as another of the same shape) and stays
/// stored. A value of the type asked for that no longer decodes (its type changed shape, or the
/// data is damaged) fails with `StorageError` code `decodingFailed`, and stays stored too.
///
/// A type's name is part of what is stored: a value stored as a type that was since renamed or
/// moved to another module reads as `nil`. Data stored without the header (by an earlier
/// version, or by another program) is decoded by its shape.
///
/// Every failure is a `StorageError`, which Vapor answers with a status of its own
/// (`400` for a key the storage refuses, `503` when the storage timed out or is closed, `500`
/// otherwise) and a reason naming its code only, never the key or the value.
///
/// The cache owns nothing: close or shut down the storage where you made it. Futures complete
/// on the cache's event loop (the request's, through `request.cache`). Any task may use it.
public struct StrataCache<Base: LifetimeStorage>: Cache, Sendable where Base.Key == String, Base.Value == Data {
    /// The storage the values live in.
    public let storage: Base
    /// The event loop the cache's futures complete on.
    public let eventLoop: any EventLoop

    /// Creates a cache over `storage` whose futures complete on `eventLoop`.
    public init(_ storage: Base, on eventLoop: any EventLoop) {
        self.storage = storage
        self.eventLoop = eventLoop
    }

    /// The value for `key` as a `T`, or `nil` when there is none or it has expired.
    public func get<T>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> where T: Decodable {
        let storage = storage
        let promise = eventLoop.makePromise(of: T?.self)
        // Seen by the closure below only as `any DecodingCompletion`: Vapor's API does not make
        // `T`'s metatype `Sendable`, so no `@Sendable` closure may name `T`.
        let completion: any DecodingCompletion = PendingDecoding(promise: promise, key: key) { data in
            guard case .value(let value) = try TypedJSON.decode(T.self, from: data) else { return nil }
            return value
        }
        eventLoop.makeFutureWithTask { () async throws -> Data? in
            try await storage.value(forKey: key)
        }
        .whenComplete { result in completion.complete(with: result) }
        return promise.futureResult
    }

    /// Stores `value` for `key`, never to expire; `nil` removes the key.
    public func set<T>(_ key: String, to value: T?) -> EventLoopFuture<Void> where T: Encodable {
        set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` for `key`, expiring after `expirationTime` (never when `nil`, whatever the
    /// storage's default time to live); `nil` removes the key.
    public func set<T>(
        _ key: String,
        to value: T?,
        expiresIn expirationTime: CacheExpirationTime?
    ) -> EventLoopFuture<Void> where T: Encodable {
        let storage = storage
        guard let value else {
            return eventLoop.makeFutureWithTask { () async throws in
                try await storage.removeValue(forKey: key)
            }
        }
        let data: Data
        do {
            data = try TypedJSON.encode(value)
        } catch {
            return eventLoop.makeFailedFuture(
                StorageError.wrapping(
                    error,
                    as: .encodingFailed,
                    key: key,
                    storage: "StrataCache",
                    message: "the value cannot be encoded as JSON; nothing was stored"
                )
            )
        }
        let lifetime = expirationTime.map { Lifetime.remaining(.seconds($0.seconds)) } ?? .unlimited
        return eventLoop.makeFutureWithTask { () async throws in
            try await storage.set(data, forKey: key, lifetime: lifetime)
        }
    }

    /// The same cache, completing its futures on `request`'s event loop.
    public func `for`(_ request: Request) -> Self {
        Self(storage, on: request.eventLoop)
    }
}

/// Completes a read's promise with the value decoded from the stored data, on the event loop.
private protocol DecodingCompletion: Sendable {
    func complete(with result: Result<Data?, any Error>)
}

/// A read of a `T` waiting for its data.
///
/// Safe to send: the decoding closure runs once, on the event loop that completes the read, and
/// decodes data it is handed; a type whose `Decodable` conformance is isolated to an actor cannot
/// be read through Vapor's API (whose `get` asks for no `Sendable`), here as in Vapor's own caches.
private struct PendingDecoding<T>: DecodingCompletion, @unchecked Sendable {
    let promise: EventLoopPromise<T?>
    let key: String
    /// The value in the data, or `nil` when the data holds a value of another type.
    let decode: (Data) throws -> T?

    /// Runs on the promise's event loop: the read's future completes there.
    func complete(with result: Result<Data?, any Error>) {
        switch result {
        case .failure(let error):
            promise.fail(error)
        case .success(nil):
            promise.assumeIsolated().succeed(nil)
        case .success(let data?):
            do {
                promise.assumeIsolated().succeed(try decode(data))
            } catch {
                promise.fail(
                    StorageError.wrapping(
                        error,
                        as: .decodingFailed,
                        key: key,
                        storage: "StrataCache",
                        message: "the stored value does not decode as \(T.self); it was left in place"
                    ).carryingUndecodedBytes(of: data)
                )
            }
        }
    }
}

extension Application.Caches.Provider {
    /// Vapor's cache over `storage`, a Strata storage of `Data` that keeps lifetimes; see
    /// ``StrataCache``.
    ///
    /// ```swift
    /// app.caches.use(.strata(MemoryStorage<String, Data>(maximumCount: 10_000)))
    /// ```
    public static func strata<Base: LifetimeStorage>(
        _ storage: Base
    ) -> Self where Base.Key == String, Base.Value == Data {
        Self { application in
            application.caches.use { application in
                StrataCache(storage, on: application.eventLoopGroup.next())
            }
        }
    }
}

extension StorageError: AbortError {
    /// The status a request that met this error is answered with: `400 Bad Request` for a key
    /// the storage refuses, `503 Service Unavailable` for a storage that timed out, is closed or
    /// was cancelled, and `500 Internal Server Error` for anything else.
    public var status: HTTPResponseStatus {
        switch code {
        case .invalidKey: .badRequest
        case .timedOut, .closed, .cancelled: .serviceUnavailable
        default: .internalServerError
        }
    }

    /// The reason the response gives: the error's code only, since keys and values may be
    /// secrets (a session's id, say).
    public var reason: String {
        "storage error: \(code)"
    }
}
#endif
