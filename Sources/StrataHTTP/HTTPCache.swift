public import Foundation
import HTTPTypes
public import Logging
public import Strata
import _StrataInternals

/// A provider that keeps an ``HTTPSource``'s responses in a storage with their validators and
/// follows RFC 9111, so that unchanged bodies are not downloaded again and no user is served
/// another's response.
///
/// Created by ``HTTPSource/cache(in:policy:clock:reporting:logger:)->HTTPCache<Records>``. For
/// each request:
/// - a stored response that is still fresh (`Cache-Control: s-maxage` in a shared cache,
///   `max-age`, or `Expires`) is returned without any request;
/// - a stale one within its `stale-while-revalidate` window is returned at once and revalidated
///   in the background, at most one revalidation per URL at a time;
/// - otherwise a stored response with an `ETag` or a `Last-Modified` date is revalidated with
///   `If-None-Match` / `If-Modified-Since`: a 304 returns the stored body (and refreshes its
///   freshness), a 2xx replaces it;
/// - when the origin cannot answer (a connection failure, a time-out, or a 500, 502, 503 or 504),
///   a stored response is returned instead of the error within its `stale-if-error` window, or
///   within ``HTTPCachePolicy/staleIfError`` when the response neither sets nor forbids one; the
///   error goes to the `reporting` closure;
/// - `no-cache` stores the response but revalidates it before every use; `no-store`, in the
///   response or in the source's request headers, never stores it (and removes any earlier one);
/// - a response with `Vary` is stored once per combination of the named request headers' values,
///   and answers only a request whose headers have the same values; `Vary: *` is never stored;
/// - a response with neither a freshness lifetime nor a validator is not stored: it could never be
///   used without downloading it again;
/// - the request's own `Cache-Control`, in the source's headers or given to
///   ``value(for:cacheControl:)``, narrows or widens what a stored response may answer: `max-age`,
///   `min-fresh`, `max-stale`, `only-if-cached` (never ask the server), `no-cache` and `no-store`.
///
/// The ``policy`` says whether the storage serves one user or many; a shared cache, the default,
/// stores neither `private` responses nor responses to requests with credentials that do not say
/// they may be shared (see ``HTTPCachePolicy/Sharing-swift.enum/shared``).
///
/// Failures are the source's and are never stored, and neither is a partial body. A storage that
/// cannot be read or written never fails a request: the error goes to the `reporting` closure
/// and the request goes to the network. Concurrent requests for one URL each ask the server; put
/// `Provider.coordinated()` after it to share one. Any task may use it.
public struct HTTPCache<Records: Storage>: Provider where Records.Key == URL, Records.Value == HTTPCacheRecord {
    /// Requests are identified by their URL.
    public typealias ID = URL
    /// A response body.
    public typealias Value = Data

    /// The source that makes the requests.
    public let source: HTTPSource
    /// The storage of responses: one per URL, or one per variant and a list of them per URL.
    public let records: Records
    /// Whether the stored responses serve one user or many, and how stale they may be served
    /// on error.
    public let policy: HTTPCachePolicy
    @usableFromInline let clock: any StorageClock
    private let report: @Sendable (StorageError) -> Void
    private let request: RequestFacts
    /// Whether any fresh stored response may answer without revalidation: the source's request
    /// says neither `no-cache` nor a `max-age` or `min-fresh` that a fresh response may fail.
    @usableFromInline let servesFreshRecords: Bool
    private let revalidations = LockedState([URL: Task<Void, Never>]())

    init(
        source: HTTPSource,
        records: Records,
        policy: HTTPCachePolicy,
        clock: any StorageClock,
        report: @escaping @Sendable (StorageError) -> Void
    ) {
        self.source = source
        self.records = records
        self.policy = policy
        self.clock = clock
        self.report = report
        self.request = RequestFacts(
            headers: source.headers,
            transportSendsCredentials: source.transport.sendsCredentials
        )
        let directives = request.directives
        self.servesFreshRecords =
            !directives.noCache && directives.maximumAge == nil && directives.minimumFreshness == nil
    }

    /// Returns the body at `url`, from the storage when RFC 9111 and the policy allow it.
    ///
    /// The common answer, a fresh response stored under the URL itself, is inlined into the
    /// caller, so that it is specialized for the caller's storage: the read then makes no call
    /// through the storage protocol and looks up no generic type at run time.
    ///
    /// - Throws: `StorageError` from the source, as ``HTTPSource`` lists; never a
    ///   storage's error.
    @inlinable
    public func value(for url: URL) async throws(StorageError) -> Data {
        let key = Self.storageKey(for: url)
        let primary = await record(forKey: key)
        if let primary, !primary.listsVariants, servesFreshRecords, primary.isFresh(at: clock.now()) {
            return primary.body
        }
        return try await value(for: url, key: key, primary: primary, call: nil)
    }

    /// Returns the body at `url` as ``value(for:)`` does, for a request that adds the
    /// `Cache-Control` directives `cacheControl` to the source's (RFC 9111, section 5.2.1):
    /// - `max-age=N`: a stored response older than N seconds is revalidated; `max-age=0` always
    ///   asks the server;
    /// - `min-fresh=N`: a stored response that stays fresh for less than N more seconds is
    ///   revalidated;
    /// - `max-stale` or `max-stale=N`: a stale stored response is served without asking, stale by
    ///   any time or by at most N seconds, unless it forbids that (`must-revalidate`, `no-cache`,
    ///   and in a shared cache `proxy-revalidate` or `s-maxage`);
    /// - `only-if-cached`: the server is never asked; without a stored response that may answer,
    ///   the request fails with `notFound` (where an HTTP cache would answer 504);
    /// - `no-cache` revalidates, and `no-store` keeps the response out of the storage.
    ///
    /// The directives are sent to the server with the request. An app's "offline" mode is
    /// `value(for: url, cacheControl: "only-if-cached, max-stale")`; a pull to refresh,
    /// `"no-cache"`. The same directives in the source's headers apply to every request.
    ///
    /// - Throws: `StorageError` as ``value(for:)``, and `notFound` for `only-if-cached` without a
    ///   usable stored response.
    public func value(for url: URL, cacheControl: String) async throws(StorageError) -> Data {
        let key = Self.storageKey(for: url)
        let primary = await record(forKey: key)
        return try await value(for: url, key: key, primary: primary, call: RequestCall(cacheControl, base: request))
    }

    /// `value(for:)` once the record under the URL's key has been read, when it is not a fresh
    /// response: a variant, a stale response or none; `call` is the request's own directives,
    /// when it has some.
    @usableFromInline
    func value(
        for url: URL,
        key: URL,
        primary: HTTPCacheRecord?,
        call: RequestCall?
    ) async throws(StorageError)
        -> Data
    {
        let directives = call?.directives ?? request.directives
        let found = await lookUp(key, primary: primary)
        if let stored = found.stored {
            let now = clock.now()
            if stored.record.answers(directives, at: now, shared: policy.isShared) {
                return stored.record.body
            }
            if !directives.noCache, !directives.onlyIfCached, directives.maximumAge == nil,
                directives.minimumFreshness == nil,
                stored.record.mayServeWhileRevalidating(at: now, shared: policy.isShared)
            {
                revalidateInBackground(url, key: key, found: found)
                return stored.record.body
            }
        }
        if directives.onlyIfCached {
            throw StorageError(
                .notFound,
                key: url,
                storage: source.name,
                message: found.stored == nil
                    ? "only-if-cached, and no response is stored"
                    : "only-if-cached, and the stored response is stale for this request"
            )
        }
        return try await fetch(url, key: key, found: found, call: call)
    }

    /// Gives up every background revalidation under way; the stored responses are kept.
    public func cancelRevalidations() {
        for task in revalidations.withLock({ Array($0.values) }) { task.cancel() }
    }

    /// Waits until every background revalidation started so far has finished.
    public func waitForRevalidations() async {
        while let task = revalidations.withLock({ $0.values.first }) {
            await task.value
        }
    }

    /// Asks the server, conditionally when a record was found, and stores what it answers.
    private func fetch(
        _ url: URL,
        key: URL,
        found: HTTPCacheLookup,
        call: RequestCall?
    ) async throws(StorageError)
        -> Data
    {
        let stored = found.stored?.record
        var conditions = HTTPFields()
        if let stored {
            if let entityTag = stored.entityTag {
                conditions[.ifNoneMatch] = entityTag
            }
            if let lastModified = stored.lastModified {
                conditions[.ifModifiedSince] = lastModified
            }
        }
        let response: HTTPSourceResponse
        do {
            response = try await source.response(for: url, conditions: conditions, adding: call?.headers ?? [:])
        } catch {
            if let stored, Self.isOriginFailure(error),
                stored.mayServeOnError(at: clock.now(), allowance: policy.staleIfError, shared: policy.isShared)
            {
                report(error)
                return stored.body
            }
            throw error
        }
        let received = clock.now()
        if response.status == 304, let found = found.stored {
            let record = found.record.revalidated(with: response.headers, at: received, shared: policy.isShared)
            // The 304's own directives decide, as a full response's would: a `no-store`, or a
            // `private` one in a shared cache, removes the record instead of refreshing it.
            if mayStore(record, call: call) {
                await set(record, forKey: found.key)
            } else {
                await remove(forKey: found.key)
            }
            return found.record.body
        }
        // A partial response is not the resource (this cache does not combine ranges), and an
        // answer from another URL is the redirect target's: neither is kept under `url`, and
        // the record they replace is outdated.
        if response.status == 206 || response.isRedirected(from: url) {
            if let stored = found.stored { await remove(forKey: stored.key) }
            return response.body
        }
        let record = HTTPCacheRecord(
            body: response.body,
            headers: response.headers,
            received: received,
            shared: policy.isShared
        )
        await keep(record, at: key, found: found, call: call)
        return response.body
    }

    /// Finds the record that answers this cache's requests for `key`: the one stored under it,
    /// or, when that lists variants, the variant whose selecting headers match the request's.
    private func lookUp(_ key: URL, primary: HTTPCacheRecord?) async -> HTTPCacheLookup {
        guard let primary else { return HTTPCacheLookup(key: key, primary: nil) }
        guard primary.listsVariants else {
            return HTTPCacheLookup(key: key, primary: primary)
        }
        let selecting = request.selectingHeaders(for: primary.vary)
        let variantKey = Self.variantKey(key, names: primary.vary, selecting: selecting)
        // A digest collision, however unlikely, must not serve another request's variant.
        guard let variant = await record(forKey: variantKey), variant.selectingHeaders == selecting,
            variant.vary == primary.vary
        else {
            return HTTPCacheLookup(key: key, primary: primary)
        }
        return HTTPCacheLookup(key: key, primary: primary, variant: StoredHTTPRecord(record: variant, key: variantKey))
    }

    /// Stores `record` under its URL or its variant's key when RFC 9111 and the policy allow it
    /// and it is useful; otherwise removes the record it replaces.
    private func keep(_ record: HTTPCacheRecord, at key: URL, found: HTTPCacheLookup, call: RequestCall?) async {
        guard mayStore(record, call: call) else {
            if let stored = found.stored { await remove(forKey: stored.key) }
            return
        }
        guard !record.vary.isEmpty else {
            await set(record, forKey: key)
            return
        }
        var variant = record
        variant.selectingHeaders = request.selectingHeaders(for: record.vary)
        await set(variant, forKey: Self.variantKey(key, names: record.vary, selecting: variant.selectingHeaders))
        if !(found.primary?.listsVariants == true && found.primary?.vary == record.vary) {
            await set(.variantList(varyingBy: record.vary, received: record.received), forKey: key)
        }
    }

    /// Whether RFC 9111 (sections 3, 3.5 and 4.1) and the policy allow storing `record`, and it
    /// is useful.
    private func mayStore(_ record: HTTPCacheRecord, call: RequestCall?) -> Bool {
        let directives = record.directives
        let requestDirectives = call?.directives ?? request.directives
        if directives.noStore || requestDirectives.noStore || record.variesUnpredictably { return false }
        if policy.isShared {
            if directives.isPrivate { return false }
            if request.carriesCredentials,
                !(directives.isPublic || directives.mustRevalidate || directives.sharedMaximumAge != nil)
            {
                return false
            }
        }
        return record.isUseful
    }

    private func revalidateInBackground(_ url: URL, key: URL, found: HTTPCacheLookup) {
        revalidations.withLock { running in
            guard running[key] == nil else { return }
            running[key] = Task { [self] in
                do throws(StorageError) {
                    _ = try await fetch(url, key: key, found: found, call: nil)
                } catch {
                    report(error)
                }
                _ = revalidations.withLock { $0.removeValue(forKey: key) }
            }
        }
    }

    @inlinable
    func record(forKey key: URL) async -> HTTPCacheRecord? {
        do {
            // Asked directly, not first through `immediateValue(forKey:)`: the read runs on the
            // caller's executor, so a storage in memory answers without suspending either way, and
            // for a disk store, which never answers at once, that question cost about 300 ns of
            // a 64 KiB hit (a memory store's hits also got faster without it).
            return try await records.value(forKey: key)
        } catch {
            readFailed(error)
            return nil
        }
    }

    /// A record that could not be read is a miss. One in another format (JSON from an earlier
    /// version) is replaced by the next response; only damage is reported.
    @usableFromInline
    func readFailed(_ error: StorageError) {
        if error.code == .decodingFailed, (error.underlying as? HTTPCacheRecordFormatError)?.isOtherFormat == true {
            return
        }
        report(error)
    }

    private func set(_ record: HTTPCacheRecord, forKey key: URL) async {
        do {
            try await records.set(record, forKey: key)
        } catch {
            report(error)
        }
    }

    private func remove(forKey key: URL) async {
        do {
            try await records.removeValue(forKey: key)
        } catch {
            report(error)
        }
    }

    /// Whether `error` says the origin could not answer, so that a stale response may stand in
    /// (RFC 5861, section 4): a transport failure, a time-out, or a 500, 502, 503 or 504.
    private static func isOriginFailure(_ error: StorageError) -> Bool {
        switch error.code {
        case .timedOut: return true
        case .sourceFailed:
            guard let status = (error.underlying as? HTTPStatusError)?.status else {
                return (error.underlying as? HTTPTransportError)?.kind != .redirects
            }
            return [500, 502, 503, 504].contains(status)
        default: return false
        }
    }

    /// The key a URL's responses are stored under: the URL without its fragment, which is never
    /// sent to the server.
    @usableFromInline
    static func storageKey(for url: URL) -> URL {
        guard url.fragment != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url
        }
        components.fragment = nil
        return components.url ?? url
    }

    /// The key of the variant of `key`'s response selected by `selecting`: the URL with a fragment
    /// naming a SHA-256 digest of the selecting headers, so every variant has a key of bounded
    /// length that no request URL (fragments are removed) can name.
    static func variantKey(_ key: URL, names: [String], selecting: [String: String]) -> URL {
        var text = ""
        for name in names {
            text += name
            if let value = selecting[name] {
                text += "+" + value
            } else {
                text += "-"
            }
            text += "\n"
        }
        let digest = SHA256.hexadecimal(SHA256.hash(text.utf8), byteCount: 16)
        return URL(string: key.absoluteString + "#strata-variant-" + digest) ?? key
    }

}

/// What `HTTPCache`'s lookup found: the record under the URL's key, and the record that answers
/// this request with the key it is stored under. Outside the generic cache, as is
/// `StoredHTTPRecord`, so that neither needs its type made at run time on every request.
private struct HTTPCacheLookup: Sendable {
    /// The URL's key.
    var key: URL
    var primary: HTTPCacheRecord?
    /// The variant that matches the request, when `primary` lists variants.
    var variant: StoredHTTPRecord?

    /// The record that answers the request and its key: `primary` itself unless it lists
    /// variants. (Kept once, not copied into a second field: a record copy retains each of
    /// its texts and its body.)
    var stored: StoredHTTPRecord? {
        guard let primary else { return nil }
        return primary.listsVariants ? variant : StoredHTTPRecord(record: primary, key: key)
    }
}

/// A stored record and the key it is stored under.
private struct StoredHTTPRecord: Sendable {
    var record: HTTPCacheRecord
    var key: URL
}

/// The `Cache-Control` of one request made through ``HTTPCache/value(for:cacheControl:)``: its
/// text, sent with the request, and the directives it makes with the source's own.
@usableFromInline
struct RequestCall: Sendable {
    let directives: CacheDirectives
    let headers: HTTPFields

    fileprivate init(_ cacheControl: String, base: RequestFacts) {
        let sourceText = base.headers.joined(.cacheControl)
        directives = CacheDirectives([sourceText, cacheControl].compactMap { $0 }.joined(separator: ", "))
        headers = [.cacheControl: cacheControl]
    }
}

/// What the cache needs to know of the source's request headers, read once.
private struct RequestFacts: Sendable {
    let headers: HTTPFields
    /// The request's own `Cache-Control`: `no-store` and `no-cache` apply.
    let directives: CacheDirectives
    /// Whether the request carries `Authorization` or a `Cookie`, its own or the transport's.
    let carriesCredentials: Bool

    init(headers: HTTPFields, transportSendsCredentials: Bool) {
        self.headers = headers
        directives = CacheDirectives(headers.joined(.cacheControl))
        carriesCredentials =
            transportSendsCredentials || headers.contains(.authorization) || headers.contains(.cookie)
    }

    /// The values of the request headers `names` (lowercased), each header's lines trimmed and
    /// joined with commas; an absent header has no entry.
    func selectingHeaders(for names: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            // A name that is not a valid field name cannot be in the request.
            guard let fieldName = HTTPField.Name(name) else { continue }
            let lines = headers[values: fieldName]
            if !lines.isEmpty {
                values[name] = lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
            }
        }
        return values
    }
}

extension HTTPSource {
    /// Returns a provider that keeps responses in `records` with their `ETag` and `Last-Modified`,
    /// revalidates them with conditional requests, and follows RFC 9111 as `policy` says.
    ///
    /// ```swift
    /// let records = try DiskStorage(url: folder).httpCacheRecords()
    /// let feeds = HTTPSource().cache(in: records).coordinated()
    /// ```
    ///
    /// - Parameters:
    ///   - records: Holds one record per URL, and one per variant of a response with `Vary`.
    ///   - policy: Whether the records serve several users (``HTTPCachePolicy/shared``, the
    ///     default) or one (``HTTPCachePolicy/private``), and how stale they may be served when
    ///     the origin fails.
    ///   - clock: Tells the time that freshness is measured against; inject a
    ///     `ManualClock` in tests.
    ///   - report: Told of storage errors and of origin failures answered with a stale response,
    ///     none of which fails a request, and of failed background revalidations.
    ///   - logger: Logs each reported error once at `.warning`, with the storage and the reason;
    ///     the URL only at `.debug`. `nil`, the default, logs nothing.
    public func cache<Records: Storage<URL, HTTPCacheRecord>>(
        in records: Records,
        policy: HTTPCachePolicy = .shared,
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> HTTPCache<Records> {
        HTTPCache(
            source: self,
            records: records,
            policy: policy,
            clock: clock,
            report: loggingReports(report, to: logger, as: "HTTPCache")
        )
    }

    /// Returns a provider that keeps responses in `records`, a storage keyed by strings (such as
    /// `DiskStorage`), under each URL's `absoluteString`; see
    /// ``cache(in:policy:clock:reporting:logger:)->HTTPCache<Records>``.
    public func cache<Records: Storage<String, HTTPCacheRecord>>(
        in records: Records,
        policy: HTTPCachePolicy = .shared,
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> HTTPCache<MappedKeysStorage<Records, URL>> {
        HTTPCache(
            source: self,
            records: records.mapKeys { (url: URL) in url.absoluteString },
            policy: policy,
            clock: clock,
            report: loggingReports(report, to: logger, as: "HTTPCache")
        )
    }
}
