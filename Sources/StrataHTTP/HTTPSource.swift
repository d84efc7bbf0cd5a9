public import Foundation
public import HTTPTypes
public import Strata
import _StrataInternals

/// A provider that downloads the body at a URL with a GET request: the network source at the root
/// of a provider chain.
///
/// ```swift
/// let images = HTTPSource(timeout: .seconds(10), maximumBodyByteCount: 5_000_000)
///     .mapValues { data, _ in try Image(decoding: data) }     // validate before caching
///     .cache(MemoryStorage<URL, Image>(maximumCount: 200))
///     .coordinated()
/// ```
///
/// The requests go through an ``HTTPTransport``: ``URLSessionTransport`` unless you pass another,
/// such as `AsyncHTTPClientTransport` from `StrataAsyncHTTPClient` on a server.
///
/// Only a 2xx response is a value. Every failure is a `StorageError`:
/// - another status: `StorageError.Code.sourceFailed`, with an ``HTTPStatusError`` holding the
///   status and header fields as `StorageError.underlying` and the status in the message;
/// - a body longer than ``maximumBodyByteCount``: `StorageError.Code.capacityExceeded`, with an
///   ``HTTPBodyTooLargeError``; the rest of the body is not downloaded;
/// - no complete response within ``timeout`` (connecting, waiting and downloading together):
///   `StorageError.Code.timedOut`;
/// - a refused or reset connection, a response cut short, redirects in a cycle: an
///   ``HTTPTransportError`` under `StorageError.Code.sourceFailed`;
/// - a transport whose client was shut down: `StorageError.Code.closed`; task cancellation:
///   `StorageError.Code.cancelled`.
///
/// The source keeps nothing between requests:
/// ``cache(in:policy:clock:reporting:logger:)->HTTPCache<Records>`` adds an RFC 9111 cache; finish
/// the chain with `coordinated()` so concurrent requests for one URL share one download. Any task
/// may use it.
public struct HTTPSource: Provider {
    /// Requests are identified by their URL.
    public typealias ID = URL
    /// A response body.
    public typealias Value = Data

    /// Sends the requests.
    public let transport: any HTTPTransport
    /// The longest one request may take, from connecting to the last byte of the body.
    public var timeout: Duration
    /// The longest body accepted, in bytes (after decompression, when the transport decompresses).
    public var maximumBodyByteCount: Int
    /// Header fields sent with every request, such as `Authorization` or `User-Agent`.
    public var headers: HTTPFields
    /// Names the source in errors' `StorageError.storage`.
    public var name: String

    /// Creates a source that sends its requests through `transport`.
    ///
    /// - Precondition: `timeout` is positive and `maximumBodyByteCount` is not negative.
    public init(
        transport: any HTTPTransport = URLSessionTransport.shared,
        timeout: Duration = .seconds(30),
        maximumBodyByteCount: Int = 32 * 1024 * 1024,
        headers: HTTPFields = [:],
        name: String = "HTTPSource"
    ) {
        precondition(timeout > .zero, "an HTTP source's timeout must be positive, got \(timeout)")
        precondition(maximumBodyByteCount >= 0, "maximumBodyByteCount must not be negative")
        self.transport = transport
        self.timeout = timeout
        self.maximumBodyByteCount = maximumBodyByteCount
        self.headers = headers
        self.name = name
    }

    /// Throws `invalidKey` unless `url` is an absolute `http` or `https` URL with a host: the
    /// request types trap on a URL without a scheme, and a cache keyed by URLs a user supplies
    /// (`example.com/a.png`, `//host/a`) must refuse them, not stop the process.
    static func checkFetchable(_ url: URL, storage: String) throws(StorageError) {
        let absolute = url.absoluteURL
        guard let scheme = absolute.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw StorageError(
                .invalidKey,
                key: url,
                storage: storage,
                message: "not an http or https URL (\(url.scheme.map { "scheme \($0)" } ?? "no scheme"))"
            )
        }
        guard let host = absolute.host, !host.isEmpty else {
            throw StorageError(.invalidKey, key: url, storage: storage, message: "the URL has no host")
        }
    }

    /// How long past the limit the source waits for a transport that keeps the limit itself.
    static let lateTransportGrace = Duration.milliseconds(500)

    /// Downloads the body at `url`.
    ///
    /// - Throws: `StorageError`, as the type's documentation lists.
    public func value(for url: URL) async throws(StorageError) -> Data {
        try await response(for: url, conditions: [:]).body
    }

    /// Makes one GET request with `extraHeaders` and `conditions` added to ``headers`` and returns
    /// a 2xx response with its body, or a 304 (only when `conditions` is not empty) without one.
    func response(
        for url: URL,
        conditions: HTTPFields,
        adding extraHeaders: HTTPFields = [:]
    ) async throws(StorageError) -> HTTPSourceResponse {
        try Self.checkFetchable(url, storage: name)
        var fields = headers
        fields.append(contentsOf: extraHeaders)
        fields.append(contentsOf: conditions)
        let request = HTTPRequest(method: .get, url: url, headerFields: fields)
        let (transport, limits) = (
            transport, HTTPTransportLimits(timeout: timeout, maximumBodyByteCount: maximumBodyByteCount)
        )
        // A transport that keeps the limit itself reports what it saw then (a refused connection
        // it kept retrying); the source waits half a second more for that answer. A loaded machine
        // can delay it by seconds, and the caller is promised the limit, not the better message.
        let limit = transport.enforcesTimeout ? timeout + Self.lateTransportGrace : timeout
        let outcome = await Deadline.race(within: limit) { () async throws -> HTTPTransportResponse in
            try await transport.send(request, limits: limits)
        }
        let response: HTTPTransportResponse
        switch outcome {
        case .value(let value): response = value
        case .failure(let error): throw storageError(for: error, url: url)
        case .timedOut:
            throw StorageError(.timedOut, key: url, storage: name, message: "no complete response within \(timeout)")
        case .cancelled:
            throw StorageError(.cancelled, key: url, storage: name, message: "the request was cancelled")
        }
        let status = response.head.status.code
        if status == 304, !conditions.isEmpty {
            return HTTPSourceResponse(
                status: status,
                headers: response.head.headerFields,
                body: Data(),
                finalURL: response.finalURL
            )
        }
        guard (200..<300).contains(status) else {
            throw statusError(response.head, url: url)
        }
        // A transport that does not stop at the limit is held to it here.
        if response.body.count > maximumBodyByteCount {
            throw storageError(
                for: HTTPBodyTooLargeError(url: url, maximumByteCount: maximumBodyByteCount, declaredByteCount: nil),
                url: url
            )
        }
        return HTTPSourceResponse(
            status: status,
            headers: response.head.headerFields,
            body: response.body,
            finalURL: response.finalURL
        )
    }

    private func statusError(_ head: HTTPResponse, url: URL) -> StorageError {
        let failure = HTTPStatusError(
            url: url,
            status: head.status.code,
            reasonPhrase: head.status.reasonPhrase,
            headers: head.headerFields
        )
        var message = "the server answered \(failure.status) \(failure.reasonPhrase)"
        if (300..<400).contains(failure.status), let location = head.headerFields[.location] {
            message += " (a redirect to \(location) that the transport does not follow)"
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
        case let error as HTTPTransportError:
            let code: StorageError.Code =
                switch error.kind {
                case .timedOut: .timedOut
                case .shutDown: .closed
                default: .sourceFailed
                }
            let message = error.kind == .timedOut ? "no complete response within \(timeout)" : error.message
            return StorageError(code, key: url, storage: name, message: message, underlying: error)
        default:
            return StorageError(
                .sourceFailed,
                key: url,
                storage: name,
                message: "the request failed",
                underlying: error
            )
        }
    }
}

/// A 2xx or 304 response with its whole body.
struct HTTPSourceResponse: Sendable {
    var status: Int
    var headers: HTTPFields
    var body: Data
    /// The URL that answered after redirects, when the transport says.
    var finalURL: URL?

    /// Whether the answer came from another URL than `url`, the one asked for.
    func isRedirected(from url: URL) -> Bool {
        guard let finalURL else { return false }
        return finalURL.absoluteURL.absoluteString != url.absoluteURL.absoluteString
    }
}

extension HTTPFields {
    /// The values of the field `name` joined with commas, or `nil` when there are none.
    func joined(_ name: HTTPField.Name) -> String? {
        let values = self[values: name]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}
