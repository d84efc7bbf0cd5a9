public import Foundation
import HTTPTypes
import Strata

/// A stored HTTP response: its body, the validators to revalidate it with, how long it stays
/// fresh, and, for a response that varies, which request it answered. ``HTTPCache`` keeps one
/// per URL, or one per variant when the response has `Vary`.
///
/// Any storage of bytes holds it through ``HTTPCacheRecordCodec``, as in
/// `DiskStorage(...).httpCacheRecords()`: the body as it is and a small head. It is also
/// `Codable`, for storages of your own. Any task may use it.
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
    /// When the response (or the 304 that last revalidated it) was received.
    public var received: Date
    /// Until when it may be used without asking the server, or `nil` when it must be revalidated
    /// before every use (`no-cache`, or neither `max-age` nor `Expires`).
    public var freshUntil: Date?
    /// The request header names the response's `Vary` listed, lowercased; empty when the response
    /// does not vary.
    public var vary: [String]
    /// The values the request's `vary` headers had, by lowercased name (an absent header has no
    /// entry): the record answers only a request whose headers have the same values.
    public var selectingHeaders: [String: String]
    /// Whether the record holds no response but says that the responses at its URL vary by the
    /// request headers ``vary`` names; each variant is a record of its own, under a key of its own.
    public var listsVariants: Bool

    /// Creates a record.
    public init(
        body: Data,
        entityTag: String? = nil,
        lastModified: String? = nil,
        cacheControl: String? = nil,
        expires: String? = nil,
        received: Date,
        freshUntil: Date? = nil,
        vary: [String] = [],
        selectingHeaders: [String: String] = [:],
        listsVariants: Bool = false
    ) {
        self.body = body
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.expires = expires
        self.received = received
        self.freshUntil = freshUntil
        self.vary = vary
        self.selectingHeaders = selectingHeaders
        self.listsVariants = listsVariants
    }

    /// Reads a record; one written before records knew about `Vary` reads as a response that does
    /// not vary.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        body = try container.decode(Data.self, forKey: .body)
        entityTag = try container.decodeIfPresent(String.self, forKey: .entityTag)
        lastModified = try container.decodeIfPresent(String.self, forKey: .lastModified)
        cacheControl = try container.decodeIfPresent(String.self, forKey: .cacheControl)
        expires = try container.decodeIfPresent(String.self, forKey: .expires)
        received = try container.decode(Date.self, forKey: .received)
        freshUntil = try container.decodeIfPresent(Date.self, forKey: .freshUntil)
        vary = try container.decodeIfPresent([String].self, forKey: .vary) ?? []
        selectingHeaders = try container.decodeIfPresent([String: String].self, forKey: .selectingHeaders) ?? [:]
        listsVariants = try container.decodeIfPresent(Bool.self, forKey: .listsVariants) ?? false
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
    /// Makes the record of a 2xx response received at `received`, its freshness as a shared or a
    /// private cache reads it.
    init(body: Data, headers: HTTPFields, received: Date, shared: Bool) {
        self.init(
            body: body,
            entityTag: headers.joined(.eTag),
            lastModified: headers.joined(.lastModified),
            cacheControl: headers.joined(.cacheControl),
            expires: headers.joined(.expires),
            received: received,
            vary: Self.fieldNames(headers.joined(.vary))
        )
        freshUntil = freshness(date: headers.joined(.date), age: headers.joined(.age), shared: shared)
    }

    /// The record that says the responses at a URL vary by `names`.
    static func variantList(varyingBy names: [String], received: Date) -> HTTPCacheRecord {
        HTTPCacheRecord(body: Data(), received: received, vary: names, listsVariants: true)
    }

    /// Returns the record updated by a 304 received at `received`: the 304's validators and
    /// caching headers replace the stored ones it carries (RFC 9111, section 4.3.4); the body stays.
    func revalidated(with headers: HTTPFields, at received: Date, shared: Bool) -> HTTPCacheRecord {
        var record = self
        record.entityTag = headers.joined(.eTag) ?? entityTag
        record.lastModified = headers.joined(.lastModified) ?? lastModified
        record.cacheControl = headers.joined(.cacheControl) ?? cacheControl
        record.expires = headers.joined(.expires) ?? expires
        record.received = received
        record.freshUntil = record.freshness(date: headers.joined(.date), age: headers.joined(.age), shared: shared)
        return record
    }

    var directives: CacheDirectives {
        CacheDirectives(cacheControl)
    }

    /// Whether `Vary: *` says that no stored response can ever be reused (RFC 9111, section 4.1).
    var variesUnpredictably: Bool {
        vary.contains("*")
    }

    /// Whether the record is fresh for a while or can be revalidated: otherwise it could never be
    /// used without downloading it again.
    var isUseful: Bool {
        canRevalidate || isFresh(at: received)
    }

    /// Whether the response forbids serving it stale unless it says otherwise itself
    /// (RFC 9111, sections 4.2.4, 5.2.2.2, 5.2.2.8 and 5.2.2.10).
    func forbidsStale(shared: Bool) -> Bool {
        let directives = directives
        return directives.mustRevalidate || directives.noCache
            || (shared && (directives.proxyRevalidate || directives.sharedMaximumAge != nil))
    }

    /// Whether the record may answer, at `date` and without asking the server, a request whose
    /// own `Cache-Control` says `request` (RFC 9111, sections 4.2 and 5.2.1): it is fresh, and
    /// - no older than the request's `max-age`;
    /// - fresh for at least the request's `min-fresh` longer;
    /// - or, stale, within the request's `max-stale`, unless the response forbids serving it stale
    ///   (`must-revalidate`, `no-cache`; in a shared cache `proxy-revalidate` or `s-maxage`).
    ///
    /// A request's `no-cache` (or a response's) makes every record ask the server first.
    func answers(_ request: CacheDirectives, at date: Date, shared: Bool) -> Bool {
        guard !request.noCache, let freshUntil else { return false }
        if let maximumAge = request.maximumAge, age(at: date, shared: shared) > TimeInterval(maximumAge) {
            return false
        }
        let freshFor = freshUntil.timeIntervalSince(date)
        if let minimumFreshness = request.minimumFreshness {
            return freshFor >= TimeInterval(max(minimumFreshness, 0)) && freshFor > 0
        }
        if freshFor > 0 { return true }
        guard let maximumStaleness = request.maximumStaleness, !forbidsStale(shared: shared) else { return false }
        return -freshFor <= TimeInterval(maximumStaleness)
    }

    /// The record's age at `date` (RFC 9111, section 4.2.3): the time since it was received, plus
    /// the age it had then. That initial age is known from the record when its lifetime is
    /// `max-age` (or, in a shared cache, `s-maxage`): the lifetime less what was left of it on
    /// receipt. For a lifetime from `Expires`, whose `Date` is not kept, it is taken as 0.
    func age(at date: Date, shared: Bool) -> TimeInterval {
        let resident = max(0, date.timeIntervalSince(received))
        let directives = directives
        guard let freshUntil,
            let lifetime = shared ? directives.sharedMaximumAge ?? directives.maximumAge : directives.maximumAge
        else {
            return resident
        }
        return resident + max(0, TimeInterval(lifetime) - freshUntil.timeIntervalSince(received))
    }

    /// Whether the stale record may be served at `date` while it is revalidated in the background:
    /// its `stale-while-revalidate` window (RFC 5861, section 3) has not passed, and the response
    /// does not forbid serving it stale (`must-revalidate`, `no-cache`, and in a shared cache
    /// `s-maxage` or `proxy-revalidate`: RFC 9111, section 4.2.4).
    func mayServeWhileRevalidating(at date: Date, shared: Bool) -> Bool {
        guard let freshUntil, !forbidsStale(shared: shared), let window = directives.staleWhileRevalidate else {
            return false
        }
        return date < freshUntil.addingTimeInterval(TimeInterval(window))
    }

    /// Whether the record may be served at `date` instead of an origin failure: within the
    /// response's own `stale-if-error` window (RFC 5861, section 4), or else within `allowance`
    /// when the response does not forbid serving stale.
    func mayServeOnError(at date: Date, allowance: Duration?, shared: Bool) -> Bool {
        let window: TimeInterval
        if let seconds = directives.staleIfError {
            window = TimeInterval(seconds)
        } else if let allowance, !forbidsStale(shared: shared) {
            window = allowance.timeInterval
        } else {
            return false
        }
        return date < (freshUntil ?? received).addingTimeInterval(window)
    }

    /// The end of the freshness lifetime (RFC 9111, section 4.2): `s-maxage` in a shared cache,
    /// else `max-age`, else `Expires` minus the response's `Date`, less the age the response
    /// already had (section 4.2.3: the larger of its `Age` and its apparent age, the time from its
    /// `Date` to its receipt); `nil` with `no-cache`.
    private func freshness(date: String?, age: String?, shared: Bool) -> Date? {
        let directives = directives
        if directives.noCache { return nil }
        let ageValue = TimeInterval(age.map { CacheDirectives.seconds($0.trimmingCharacters(in: .whitespaces)) } ?? 0)
        let apparentAge = date.flatMap(parseHTTPDate).map { max(0, received.timeIntervalSince($0)) } ?? 0
        let initialAge = max(ageValue, apparentAge)
        let lifetime: TimeInterval
        if shared, let sharedMaximumAge = directives.sharedMaximumAge {
            lifetime = TimeInterval(sharedMaximumAge)
        } else if let maximumAge = directives.maximumAge {
            lifetime = TimeInterval(maximumAge)
        } else if let expires {
            // An invalid date, such as "0", means already expired.
            guard let expiry = parseHTTPDate(expires) else { return received }
            let sent = date.flatMap(parseHTTPDate) ?? received
            lifetime = expiry.timeIntervalSince(sent)
        } else {
            return nil
        }
        return received.addingTimeInterval(max(lifetime - initialAge, 0))
    }

    /// The lowercased field names in a `Vary` value, without repeats, in their first order.
    static func fieldNames(_ text: String?) -> [String] {
        guard let text else { return [] }
        var names: [String] = []
        for piece in CacheDirectives.split(text) {
            let name = piece.trimmingCharacters(in: .whitespaces).lowercased()
            if !names.contains(name) { names.append(name) }
        }
        return names
    }
}
