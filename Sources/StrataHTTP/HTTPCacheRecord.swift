public import Foundation
import NIOHTTP1

/// A stored HTTP answer: its body, the validators to revalidate it with, and how long it stays
/// fresh. ``HTTPCache`` keeps one per URL in any Strata storage.
///
/// It is `Codable`, so any storage of bytes can hold it through a codec, as in
/// `DiskStorage(...).json(HTTPCacheRecord.self)`. Any task may use it.
public struct HTTPCacheRecord: Codable, Sendable, Equatable {
    /// The body.
    public var body: Data
    /// The `ETag` the server sent, sent back in `If-None-Match`.
    public var entityTag: String?
    /// The `Last-Modified` date the server sent, sent back verbatim in `If-Modified-Since`.
    public var lastModified: String?
    /// The `Cache-Control` directives the server sent, several lines joined with commas.
    public var cacheControl: String?
    /// The `Expires` date the server sent, used only when `Cache-Control` has no `max-age`.
    public var expires: String?
    /// When the answer (or the 304 that last revalidated it) was received.
    public var received: Date
    /// Until when it may be used without asking the server, or `nil` when it must be revalidated
    /// before every use (`no-cache`, or neither `max-age` nor `Expires`).
    public var freshUntil: Date?

    /// Creates a record.
    public init(
        body: Data,
        entityTag: String? = nil,
        lastModified: String? = nil,
        cacheControl: String? = nil,
        expires: String? = nil,
        received: Date,
        freshUntil: Date? = nil
    ) {
        self.body = body
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.expires = expires
        self.received = received
        self.freshUntil = freshUntil
    }

    /// Returns whether the record may be used at `date` without asking the server.
    public func isFresh(at date: Date) -> Bool {
        guard let freshUntil else { return false }
        return date < freshUntil
    }

    /// Whether the server can be asked whether the record is still current: it has an `ETag` or
    /// a `Last-Modified` date.
    public var canRevalidate: Bool {
        entityTag != nil || lastModified != nil
    }
}

extension HTTPCacheRecord {
    /// Makes the record of a 2xx answer received at `received`.
    init(body: Data, headers: HTTPHeaders, received: Date) {
        self.init(
            body: body,
            entityTag: headers.joined("etag"),
            lastModified: headers.joined("last-modified"),
            cacheControl: headers.joined("cache-control"),
            expires: headers.joined("expires"),
            received: received
        )
        freshUntil = freshness(date: headers.joined("date"), age: headers.joined("age"))
    }

    /// Returns the record updated by a 304 received at `received`: the 304's validators and
    /// caching headers replace the stored ones it carries (RFC 9111, section 4.3.4); the body stays.
    func revalidated(with headers: HTTPHeaders, at received: Date) -> HTTPCacheRecord {
        var record = self
        record.entityTag = headers.joined("etag") ?? entityTag
        record.lastModified = headers.joined("last-modified") ?? lastModified
        record.cacheControl = headers.joined("cache-control") ?? cacheControl
        record.expires = headers.joined("expires") ?? expires
        record.received = received
        record.freshUntil = record.freshness(date: headers.joined("date"), age: headers.joined("age"))
        return record
    }

    /// Whether storing the record is allowed and useful: not `no-store`, and either fresh for a
    /// while or revalidatable.
    var isWorthStoring: Bool {
        if directives.noStore { return false }
        return canRevalidate || isFresh(at: received)
    }

    var directives: CacheDirectives {
        CacheDirectives(cacheControl)
    }

    /// The end of the freshness lifetime (RFC 9111, section 4.2): `max-age`, else `Expires` minus
    /// the answer's `Date`, less the `Age` the answer already had; `nil` with `no-cache`.
    private func freshness(date: String?, age: String?) -> Date? {
        let directives = directives
        if directives.noCache { return nil }
        let initialAge = TimeInterval(age.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0)
        let lifetime: TimeInterval
        if let maximumAge = directives.maximumAge {
            lifetime = TimeInterval(maximumAge)
        } else if let expires {
            // An invalid date, such as "0", means already expired.
            guard let expiry = parseHTTPDate(expires) else { return received }
            let sent = date.flatMap(parseHTTPDate) ?? received
            lifetime = expiry.timeIntervalSince(sent)
        } else {
            return nil
        }
        return received.addingTimeInterval(max(lifetime - max(initialAge, 0), 0))
    }
}

extension HTTPHeaders {
    /// The values of the header `name` joined with commas, or `nil` when there are none.
    func joined(_ name: String) -> String? {
        let values = self[name]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}
