/// Who an ``HTTPCache`` serves, and how far it may go past a response's freshness when the origin
/// fails.
///
/// ```swift
/// // On a server, one store for every user: the default.
/// let shared = HTTPSource(headers: [.authorization: token]).cache(in: records)
/// // In an app, one store per signed-in user: may keep `private` responses.
/// let mine = HTTPSource(headers: [.authorization: token]).cache(in: records, policy: .private)
/// ```
///
/// Any task may use it.
public struct HTTPCachePolicy: Sendable, Hashable {
    /// Whether a cache's stored responses may be served to more than one user.
    public enum Sharing: Sendable, Hashable {
        /// Several users share the stored responses (a server's disk, PostgreSQL, a `SharedCache`),
        /// so the cache follows RFC 9111's rules for shared caches: it never stores a `private`
        /// response; it stores a response to a request with `Authorization` only when the response
        /// says it may (`public`, `s-maxage` or `must-revalidate`, section 3.5); it uses `s-maxage`
        /// over `max-age`, and `proxy-revalidate` and `s-maxage` forbid serving stale. A request
        /// with a `Cookie` is treated like one with `Authorization` (stricter than RFC 9111, as
        /// shared caches such as Varnish are by default): responses to it are usually one user's.
        case shared
        /// One user's stored responses (an app's cache for its signed-in user): `private` responses
        /// and responses to requests with credentials are stored; `s-maxage` and
        /// `proxy-revalidate` are ignored. Never put a private cache's store behind several
        /// users' requests.
        case `private`
    }

    /// Whether the stored responses may be served to more than one user.
    public var sharing: Sharing
    /// How long past its freshness a stored response may be served when the origin cannot answer
    /// (a connection failure, a time-out, or a 500, 502, 503 or 504), for responses that do not
    /// say themselves with `stale-if-error` (RFC 5861). `nil`, the default, serves nothing stale
    /// on error unless the response allows it. Never applies to a response with
    /// `must-revalidate` (or, in a shared cache, `proxy-revalidate` or `s-maxage`).
    public var staleIfError: Duration?

    /// Creates a policy.
    ///
    /// - Precondition: `staleIfError`, when given, is not negative.
    public init(sharing: Sharing = .shared, staleIfError: Duration? = nil) {
        if let staleIfError {
            precondition(staleIfError >= .zero, "staleIfError must not be negative, got \(staleIfError)")
        }
        self.sharing = sharing
        self.staleIfError = staleIfError
    }

    /// A cache whose responses may be served to several users; RFC 9111's rules for shared caches.
    public static let shared = HTTPCachePolicy(sharing: .shared)
    /// One user's cache; RFC 9111's rules for private caches.
    public static let `private` = HTTPCachePolicy(sharing: .private)

    var isShared: Bool { sharing == .shared }
}
