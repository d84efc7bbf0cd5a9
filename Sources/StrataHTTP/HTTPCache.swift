public import Foundation
public import Logging
import NIOHTTP1
public import Strata

/// A provider that keeps an ``HTTPSource``'s answers in a storage with their validators and
/// follows the server's caching headers, so that unchanged bodies are not downloaded again.
///
/// Created by ``HTTPSource/cache(in:clock:reporting:logger:)->HTTPCache<Records>``. For each request:
/// - a stored answer that is still fresh (`Cache-Control: max-age`, or `Expires`) is returned
///   without any request;
/// - otherwise a stored answer with an `ETag` or a `Last-Modified` date is revalidated with
///   `If-None-Match` / `If-Modified-Since`: a 304 returns the stored body (and refreshes its
///   freshness), a 2xx replaces it;
/// - `no-cache` stores the answer but revalidates it before every use; `no-store` never stores it
///   (and removes any earlier one);
/// - an answer with neither a freshness lifetime nor a validator is not stored: it could never be
///   used without downloading it again.
///
/// Failures are the source's and are never stored; a stored answer is not served when the
/// server cannot be reached. A storage that cannot be read or written never fails a request: the
/// error goes to the `reporting` closure and the request goes to the network. Like HTTP's own
/// private caches, it keys answers by URL alone and ignores `Vary`.
///
/// Concurrent requests for one URL each ask the server; put `AsyncProvider.coordinated()`
/// after it to share one. Any task may use it.
public struct HTTPCache<Records: Storage>: AsyncProvider where Records.Key == URL, Records.Value == HTTPCacheRecord {
    /// Requests are identified by their URL.
    public typealias ID = URL
    /// A response body.
    public typealias Value = Data

    /// The source that makes the requests.
    public let source: HTTPSource
    /// The storage of answers, one per URL.
    public let records: Records
    private let clock: any StorageClock
    private let report: @Sendable (StorageError) -> Void

    init(
        source: HTTPSource,
        records: Records,
        clock: any StorageClock,
        report: @escaping @Sendable (StorageError) -> Void
    ) {
        self.source = source
        self.records = records
        self.clock = clock
        self.report = report
    }

    /// Returns the body at `url`, from the storage when the server's caching headers allow it.
    ///
    /// - Throws: `StorageError` from the source, as ``HTTPSource`` lists; never a
    ///   storage's error.
    public func value(for url: URL) async throws(StorageError) -> Data {
        let stored = await storedRecord(for: url)
        if let stored, stored.isFresh(at: clock.now()) {
            return stored.body
        }
        var conditions = HTTPHeaders()
        if let stored {
            if let entityTag = stored.entityTag {
                conditions.add(name: "If-None-Match", value: entityTag)
            }
            if let lastModified = stored.lastModified {
                conditions.add(name: "If-Modified-Since", value: lastModified)
            }
        }
        let response = try await source.response(for: url, conditions: conditions)
        let received = clock.now()
        if response.status == 304, let stored {
            await keep(stored.revalidated(with: response.headers, at: received), for: url, replacing: true)
            return stored.body
        }
        await keep(
            HTTPCacheRecord(body: response.body, headers: response.headers, received: received),
            for: url,
            replacing: stored != nil
        )
        return response.body
    }

    private func storedRecord(for url: URL) async -> HTTPCacheRecord? {
        do {
            // A storage in memory answers without suspending.
            switch try records.immediateValue(forKey: url) {
            case .found(let record): return record
            case .absent: return nil
            case .unavailable: return try await records.value(forKey: url)
            }
        } catch {
            report(error)
            return nil
        }
    }

    /// Stores `record` when it is worth storing; otherwise removes the one it replaces.
    private func keep(_ record: HTTPCacheRecord, for url: URL, replacing: Bool) async {
        do {
            if record.isWorthStoring {
                try await records.set(record, forKey: url)
            } else if replacing {
                try await records.removeValue(forKey: url)
            }
        } catch {
            report(error)
        }
    }
}

extension HTTPSource {
    /// Returns a provider that keeps answers in `records` with their `ETag` and `Last-Modified`,
    /// revalidates them with conditional requests, and honours `Cache-Control`.
    ///
    /// ```swift
    /// let records = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
    /// let feeds = HTTPSource().cache(in: records).coordinated()
    /// ```
    ///
    /// - Parameters:
    ///   - records: Holds one record per URL.
    ///   - clock: Tells the time that freshness is measured against; inject a
    ///     `ManualClock` in tests.
    ///   - report: Told of storage errors, none of which fails a request.
    ///   - logger: Logs each storage error once at `.warning`, with the storage and the reason;
    ///     the URL only at `.debug`. `nil`, the default, logs nothing.
    public func cache<Records: Storage<URL, HTTPCacheRecord>>(
        in records: Records,
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> HTTPCache<Records> {
        HTTPCache(
            source: self,
            records: records,
            clock: clock,
            report: loggingReports(report, to: logger, as: "HTTPCache")
        )
    }

    /// Returns a provider that keeps answers in `records`, a storage keyed by strings (such as
    /// `DiskStorage`), under each URL's `absoluteString`; see
    /// ``cache(in:clock:reporting:logger:)->HTTPCache<Records>``.
    public func cache<Records: Storage<String, HTTPCacheRecord>>(
        in records: Records,
        clock: any StorageClock = SystemClock(),
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> HTTPCache<MappedKeysStorage<Records, URL>> {
        HTTPCache(
            source: self,
            records: records.mapKeys { (url: URL) in url.absoluteString },
            clock: clock,
            report: loggingReports(report, to: logger, as: "HTTPCache")
        )
    }
}
