public import Foundation
public import HTTPTypes
public import Strata

/// A server's answer that was not a success: the underlying error of the
/// `StorageError.Code.sourceFailed` that ``HTTPSource`` throws for a status outside 2xx.
///
/// Read ``headers`` for what the server added, such as `Retry-After` or `Location`. Any task may
/// use it.
public struct HTTPStatusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL asked for.
    public var url: URL
    /// The status code, such as 404.
    public var status: Int
    /// The status's reason phrase, such as "Not Found".
    public var reasonPhrase: String
    /// The response's header fields.
    public var headers: HTTPFields

    /// Creates an error for an answer with `status`.
    public init(url: URL, status: Int, reasonPhrase: String, headers: HTTPFields = [:]) {
        self.url = url
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.headers = headers
    }

    /// One line for a person.
    public var description: String {
        "HTTP \(status) \(reasonPhrase) for \(url.absoluteString)"
    }
}

extension HTTPStatusError: RetryAdvice {
    /// Whether asking again may get a different answer: a 5xx, 408 (Request Timeout) or 429 (Too
    /// Many Requests); never any other 4xx.
    public var isTransient: Bool {
        status >= 500 || status == 408 || status == 429
    }

    /// The wait the server asked for in `Retry-After` (RFC 9110, section 10.2.3), as seconds or
    /// as a date measured from now; `nil` when it said nothing readable.
    public var retryAfter: Duration? {
        guard let text = headers[.retryAfter]?.trimmingCharacters(in: .whitespaces) else {
            return nil
        }
        if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return .seconds(CacheDirectives.seconds(text))
        }
        guard let date = parseHTTPDate(text) else { return nil }
        return .seconds(max(date.timeIntervalSinceNow, 0))
    }
}
