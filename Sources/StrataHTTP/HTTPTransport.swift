public import Foundation
public import HTTPTypes
public import Strata

/// Sends one HTTP request and returns the response with its whole body: what ``HTTPSource``
/// needs of an HTTP client, in swift-http-types' currency types.
///
/// Two transports come with the package: ``URLSessionTransport`` (here, on URLSession, so an app
/// ships no SwiftNIO) and `AsyncHTTPClientTransport` (in `StrataAsyncHTTPClient`, for servers).
/// Write your own for any other client:
///
/// ```swift
/// struct Recorded: HTTPTransport {
///     let responses: [String: Data]
///     func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse {
///         guard let body = responses[request.path ?? ""] else {
///             return HTTPTransportResponse(head: HTTPResponse(status: .notFound), body: Data())
///         }
///         return HTTPTransportResponse(head: HTTPResponse(status: .ok), body: body)
///     }
/// }
/// ```
///
/// What ``send(_:limits:)`` throws decides the `StorageError` the source throws: an
/// ``HTTPBodyTooLargeError`` (`capacityExceeded`), an ``HTTPTransportError`` (its kind's code),
/// `CancellationError` (`cancelled`); anything else is `sourceFailed`. A transport must be safe to
/// use from any task.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response head and its whole body.
    ///
    /// Follows redirects as the transport's client does; returns every final status, 304 and
    /// errors included. Stops reading a body longer than `limits.maximumBodyByteCount` and throws
    /// ``HTTPBodyTooLargeError``. See ``enforcesTimeout`` for who keeps `limits.timeout`.
    func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse

    /// Whether ``send(_:limits:)`` itself ends every request by `limits.timeout`, reporting what
    /// it saw then (a refused connection it kept retrying, say). When `false`, the default,
    /// ``HTTPSource`` cancels the request at the limit; when `true` it waits for the transport's
    /// answer, which says more than a bare time-out, for half a second past the limit, and then
    /// answers `timedOut` itself: the caller always hears within the limit and half a second,
    /// however busy the machine is.
    var enforcesTimeout: Bool { get }

    /// Whether the transport adds credentials of its own to every request (an `Authorization` or
    /// a `Cookie` from its configuration). ``HTTPCache`` then treats every request as carrying
    /// credentials, as it does for those in ``HTTPSource/headers``: a shared cache stores a
    /// response to them only when the response allows it (`public`, `s-maxage` or
    /// `must-revalidate`).
    var sendsCredentials: Bool { get }
}

extension HTTPTransport {
    /// `false`: ``HTTPSource`` keeps the time limit.
    public var enforcesTimeout: Bool { false }

    /// `false`: the transport adds no credentials of its own.
    public var sendsCredentials: Bool { false }
}

/// The limits of one request.
public struct HTTPTransportLimits: Sendable, Hashable {
    /// The longest the request may take, from connecting to the last byte of the body.
    public var timeout: Duration
    /// The longest body accepted, in bytes.
    public var maximumBodyByteCount: Int

    /// Creates limits.
    public init(timeout: Duration, maximumBodyByteCount: Int) {
        self.timeout = timeout
        self.maximumBodyByteCount = maximumBodyByteCount
    }
}

/// A response with its whole body.
public struct HTTPTransportResponse: Sendable {
    /// The status and header fields.
    public var head: HTTPResponse
    /// The body.
    public var body: Data
    /// The URL that answered, after any redirects the transport followed; `nil` when the
    /// transport does not say. ``HTTPCache`` stores nothing under a URL whose answer came from
    /// another one: the redirect's own caching headers, which the transport never showed, decide
    /// whether it may be reused, not the target's.
    public var finalURL: URL?

    /// Creates a response.
    public init(head: HTTPResponse, body: Data, finalURL: URL? = nil) {
        self.head = head
        self.body = body
        self.finalURL = finalURL
    }
}

/// A request that did not end in a response: the underlying error of the `StorageError` that
/// ``HTTPSource`` throws, with what happened in words and the client's own error beneath. Any
/// task may use it.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible, RetryAdvice {
    /// What happened, which decides the `StorageError.Code`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        let name: String

        /// No complete response within the time limit: `timedOut`.
        public static let timedOut = Kind(name: "timedOut")
        /// The connection could not be made, or broke before the response was whole (refused,
        /// reset, closed mid-body, a malformed response): `sourceFailed`, worth retrying.
        public static let connectionFailed = Kind(name: "connectionFailed")
        /// The redirects go round in a cycle or exceed the client's limit: `sourceFailed`, not
        /// worth retrying.
        public static let redirects = Kind(name: "redirects")
        /// The client was shut down: `closed`.
        public static let shutDown = Kind(name: "shutDown")
        /// The request could not be made (a URL the client cannot use): `sourceFailed`.
        public static let invalidRequest = Kind(name: "invalidRequest")

        public var description: String { name }
    }

    /// What happened.
    public var kind: Kind
    /// What happened, for a person, such as "the server refused the connection (is it running?)".
    public var message: String
    /// The client's own error.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ kind: Kind, message: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// Whether asking again may succeed: after a time-out or a failed connection.
    public var isTransient: Bool {
        kind == .timedOut || kind == .connectionFailed
    }

    /// `nil`: a transport failure names no wait.
    public var retryAfter: Duration? { nil }

    /// One line for a person.
    public var description: String {
        if let underlying { return "\(message) (\(underlying))" }
        return message
    }
}
