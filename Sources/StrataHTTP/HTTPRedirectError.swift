public import AsyncHTTPClient
public import Foundation
public import Strata

/// Redirects that could not end in an answer: the underlying error of the
/// `StorageError.Code.sourceFailed` that ``HTTPSource`` throws when the redirects go round in a
/// cycle or exceed the client's limit. Asking again gets the same redirects, so `retrying()`
/// does not. Any task may use it.
public struct HTTPRedirectError: Error, Sendable, CustomStringConvertible, RetryAdvice {
    /// The URL asked for.
    public var url: URL
    /// The client's error: `HTTPClientError.redirectCycleDetected` or `.redirectLimitReached`.
    public var clientError: HTTPClientError

    /// Creates an error for `url`.
    public init(url: URL, clientError: HTTPClientError) {
        self.url = url
        self.clientError = clientError
    }

    /// Never: the server sends the same redirects again.
    public var isTransient: Bool { false }
    /// `nil`: there is nothing to wait for.
    public var retryAfter: Duration? { nil }

    /// One line for a person.
    public var description: String {
        "redirects from \(url.absoluteString) could not be followed: \(clientError)"
    }
}
