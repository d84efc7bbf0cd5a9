public import Foundation
public import NIOHTTP1

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
    /// The answer's headers.
    public var headers: HTTPHeaders

    /// Creates an error for an answer with `status`.
    public init(url: URL, status: Int, reasonPhrase: String, headers: HTTPHeaders = [:]) {
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
