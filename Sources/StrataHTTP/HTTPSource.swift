public import AsyncHTTPClient
public import Foundation
import NIOCore
public import NIOHTTP1
public import Strata

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A provider that downloads the body at a URL with a GET request: the network source at the root
/// of a provider chain.
///
/// ```swift
/// let images = HTTPSource(timeout: .seconds(10), maximumBodyByteCount: 5_000_000)
///     .mapValue { data, _ in try Image(decoding: data) }     // validate before caching
///     .cache(try MemoryStorage<URL, Image>(maximumCount: 200))
///     .coordinated()
/// ```
///
/// Only a 2xx answer is a value. Every failure is a `StorageError`:
/// - another status: `StorageError.Code.sourceFailed`, with an ``HTTPStatusError`` holding the
///   status and headers as `StorageError.underlying` and the status in the message;
/// - a body longer than ``maximumBodyByteCount``: `StorageError.Code.capacityExceeded`, with an
///   ``HTTPBodyTooLargeError``; the rest of the body is not downloaded;
/// - no complete answer within ``timeout`` (connecting, waiting and downloading together):
///   `StorageError.Code.timedOut`;
/// - a refused or reset connection, or any other transport error: `StorageError.Code.sourceFailed`
///   with the client's error underneath;
/// - a client that was shut down: `StorageError.Code.closed`; task cancellation:
///   `StorageError.Code.cancelled`.
///
/// Redirects are followed as the client's `redirectConfiguration` says: `HTTPClient.shared`
/// follows up to 20 without cycles; a client made with `redirectConfiguration: .disallow` makes a
/// redirect a `StorageError.Code.sourceFailed` with its 3xx status.
///
/// The source never shuts its client down. `HTTPClient.shared` needs no shutting down; a client
/// you create is yours: call `try await client.shutdown()` once the last request has finished.
///
/// The source keeps nothing between requests: ``cache(in:policy:clock:reporting:logger:)->HTTPCache<Records>``
/// adds conditional requests; finish the chain with `coordinated()` so concurrent requests for one
/// URL share one download. Any task may use it.
public struct HTTPSource: AsyncProvider {
    /// Requests are identified by their URL.
    public typealias ID = URL
    /// A response body.
    public typealias Value = Data

    /// The client that makes the requests; see the type's documentation for who shuts it down.
    public let client: HTTPClient
    /// The longest one request may take, from asking for a connection to the last byte of the body.
    public var timeout: Duration
    /// The longest body accepted, in bytes (after decompression, when the client decompresses).
    public var maximumBodyByteCount: Int
    /// Headers sent with every request, such as `Authorization` or `User-Agent`.
    public var headers: HTTPHeaders
    /// Names the source in errors' `StorageError.storage`.
    public var name: String

    /// Creates a source that makes its requests with `client`.
    ///
    /// - Precondition: `timeout` is positive and `maximumBodyByteCount` is not negative.
    public init(
        client: HTTPClient = .shared,
        timeout: Duration = .seconds(30),
        maximumBodyByteCount: Int = 32 * 1024 * 1024,
        headers: HTTPHeaders = [:],
        name: String = "HTTPSource"
    ) {
        precondition(timeout > .zero, "an HTTP source's timeout must be positive, got \(timeout)")
        precondition(maximumBodyByteCount >= 0, "maximumBodyByteCount must not be negative")
        self.client = client
        self.timeout = timeout
        self.maximumBodyByteCount = maximumBodyByteCount
        self.headers = headers
        self.name = name
    }

    /// Downloads the body at `url`.
    ///
    /// - Throws: `StorageError`, as the type's documentation lists.
    public func value(for url: URL) async throws(StorageError) -> Data {
        try await response(for: url, conditions: [:]).body
    }

    /// Makes one GET request with `conditions` added to ``headers`` and returns a 2xx answer with its
    /// body, or a 304 (only when `conditions` is not empty) without one.
    func response(for url: URL, conditions: HTTPHeaders) async throws(StorageError) -> HTTPSourceResponse {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: timeout)
        do {
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .GET
            request.headers = headers
            request.headers.add(contentsOf: conditions)
            let response = try await client.execute(
                request,
                deadline: .now() + .nanoseconds(timeout.clampedNanoseconds)
            )
            let status = Int(response.status.code)
            if status == 304, !conditions.isEmpty {
                return HTTPSourceResponse(status: status, headers: response.headers, body: Data())
            }
            guard (200..<300).contains(status) else {
                throw statusError(response, url: url)
            }
            if let declared = response.headers.first(name: "content-length").flatMap({ Int($0) }),
                declared > maximumBodyByteCount
            {
                throw HTTPBodyTooLargeError(
                    url: url,
                    maximumByteCount: maximumBodyByteCount,
                    declaredByteCount: declared
                )
            }
            let body = try await collectBody(of: response, url: url, until: end)
            return HTTPSourceResponse(status: status, headers: response.headers, body: body)
        } catch {
            throw storageError(for: error, url: url)
        }
    }

    /// Collects the body, giving up at `end`: the client's deadline covers only the answer's head.
    private func collectBody(
        of response: HTTPClientResponse,
        url: URL,
        until end: ContinuousClock.Instant
    ) async throws -> Data {
        let limit = maximumBodyByteCount
        let remaining = ContinuousClock.now.duration(to: end)
        let outcome = await Deadline.race(within: remaining) { () async throws -> ByteBuffer in
            do {
                return try await response.body.collect(upTo: limit)
            } catch is NIOTooManyBytesError {
                throw HTTPBodyTooLargeError(url: url, maximumByteCount: limit, declaredByteCount: nil)
            }
        }
        let buffer: ByteBuffer
        switch outcome {
        case .value(let collected): buffer = collected
        case .failure(let error): throw error
        case .timedOut: throw HTTPClientError.deadlineExceeded
        case .cancelled: throw CancellationError()
        }
        return Data(buffer.readableBytesView)
    }

    private func statusError(_ response: HTTPClientResponse, url: URL) -> StorageError {
        let failure = HTTPStatusError(
            url: url,
            status: Int(response.status.code),
            reasonPhrase: response.status.reasonPhrase,
            headers: response.headers
        )
        var message = "the server answered \(failure.status) \(failure.reasonPhrase)"
        if (300..<400).contains(failure.status), let location = response.headers.first(name: "location") {
            message += " (a redirect to \(location) that the client does not follow)"
        }
        return StorageError(.sourceFailed, key: url, storage: name, message: message, underlying: failure)
    }

    private func storageError(for error: any Error, url: URL) -> StorageError {
        switch error {
        case let error as StorageError:
            return error
        case let error as HTTPBodyTooLargeError:
            return StorageError(
                .capacityExceeded,
                key: url,
                storage: name,
                message: "the body is larger than the limit of \(error.maximumByteCount) bytes",
                underlying: error
            )
        case is CancellationError:
            return StorageError(.cancelled, key: url, storage: name, message: "the request was cancelled")
        case let error as HTTPClientError:
            if error == .cancelled, Task.isCancelled {
                return StorageError(.cancelled, key: url, storage: name, message: "the request was cancelled")
            }
            if Self.timeouts.contains(error) {
                return StorageError(
                    .timedOut,
                    key: url,
                    storage: name,
                    message: "no complete answer within \(timeout)",
                    underlying: error
                )
            }
            if error == .alreadyShutdown {
                return StorageError(
                    .closed,
                    key: url,
                    storage: name,
                    message: "the HTTP client was shut down",
                    underlying: error
                )
            }
            if error == .redirectCycleDetected || error == .redirectLimitReached {
                return StorageError(
                    .sourceFailed,
                    key: url,
                    storage: name,
                    message: Self.explain(error),
                    underlying: HTTPRedirectError(url: url, clientError: error)
                )
            }
            return StorageError(.sourceFailed, key: url, storage: name, message: Self.explain(error), underlying: error)
        default:
            return StorageError(.sourceFailed, key: url, storage: name, message: Self.explain(error), underlying: error)
        }
    }

    /// Says in words what a transport error means; the error itself stays in `underlying`.
    private static func explain(_ error: any Error) -> String {
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return "the server refused the connection (is it running?)"
            case ECONNRESET: return "the server reset the connection"
            default: return "the connection failed"
            }
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .remoteConnectionClosed: return "the server closed the connection before answering"
            case .redirectCycleDetected: return "the redirects go round in a cycle"
            case .redirectLimitReached: return "the answer redirected more times than the client allows"
            default: return "the request failed"
            }
        }
        if error is HTTPParserError {
            return "the answer was cut short or malformed"
        }
        return "the request failed"
    }

    private static let timeouts: [HTTPClientError] = [
        .deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .getConnectionFromPoolTimeout,
    ]
}

/// A 2xx or 304 answer with its whole body.
struct HTTPSourceResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: Data
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to what an `Int64` holds.
    var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (wholeSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return wholeSeconds.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
