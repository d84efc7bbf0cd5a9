public import Foundation

/// An answer whose body exceeds ``HTTPSource/maximumBodyByteCount``: the underlying error of the
/// `StorageError.Code.capacityExceeded` that ``HTTPSource`` throws.
///
/// The download stops as soon as the limit is passed, or before it starts when `Content-Length`
/// already says so. Any task may use it.
public struct HTTPBodyTooLargeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL asked for.
    public var url: URL
    /// The limit that was exceeded, in bytes.
    public var maximumByteCount: Int
    /// The length the server declared in `Content-Length`, or `nil` when it declared none and the
    /// download passed the limit.
    public var declaredByteCount: Int?

    /// Creates an error for a body over `maximumByteCount`.
    public init(url: URL, maximumByteCount: Int, declaredByteCount: Int?) {
        self.url = url
        self.maximumByteCount = maximumByteCount
        self.declaredByteCount = declaredByteCount
    }

    /// One line for a person.
    public var description: String {
        if let declaredByteCount {
            return "the body at \(url.absoluteString) declares \(declaredByteCount) bytes, over the limit of "
                + "\(maximumByteCount)"
        }
        return "the body at \(url.absoluteString) is longer than the limit of \(maximumByteCount) bytes"
    }
}
