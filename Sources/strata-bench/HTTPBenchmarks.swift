import Foundation
import Strata
import StrataHTTP

/// The figures for StrataHTTP's cache: a fresh response answered from a disk store, against
/// reading a file of the response body's size with bare system calls (`RawFiles`) in the same
/// rounds. No request reaches a network: every stored response is fresh for ever.
extension Benchmark {
    /// Responses stored by `http.cache.hit.64k`.
    static let httpResponseCount = 256
    /// Hits per round.
    static let httpHits = 2_048
    /// The body size.
    static let httpBodyByteCount = 64 * 1024

    static var http: [Benchmark] {
        [httpCacheHit64k(readsInPlace: true), httpCacheHit64k(readsInPlace: false), httpMemoryHit]
    }

    /// `HTTPCache.value(for:)` over `DiskStorage(...).httpCacheRecords()`, awaited one after
    /// another from one task as a server's handler would. The reference is the same records read
    /// and decoded synchronously, so the difference is the async hop and the cache's own work.
    /// With the default options a read the page cache holds is made on the caller's thread;
    /// `.hop`: without `Options.readsInPlace`, every read hops to Strata's I/O threads and back.
    static func httpCacheHit64k(readsInPlace: Bool) -> Benchmark {
        let suffix = readsInPlace ? "" : ".hop"
        return Benchmark(name: "http.cache.hit.64k" + suffix, baseline: RawFiles.name) {
            let (disk, urls) = try httpRecords(name: "http-hit-64k" + suffix, readsInPlace: readsInPlace)
            let records = disk.httpCacheRecords()
            let cache = HTTPSource().cache(in: records)
            let raw = try RawFiles(
                name: "raw-http-64k" + suffix,
                count: httpResponseCount,
                valueSize: httpBodyByteCount
            )
            let probes = DataSet(count: httpResponseCount, valueByteCount: 0).randomIndices(httpHits)
            return Workloads(
                operations: probes.count,
                subject: { try await readThroughCache(cache, urls: urls, probes: probes) },
                baseline: { try raw.readAll(probes) },
                reference: ("records read synchronously", { try readSynchronously(disk, urls: urls, probes: probes) })
            )
        }
    }

    /// A disk store in the folder `name` holding a 64 KiB response fresh for ever at each of the
    /// figure's URLs, and the URLs.
    static func httpRecords(name: String, readsInPlace: Bool = true) throws -> (DiskStorage, [URL]) {
        var options = DiskStorage.Options()
        options.readsInPlace = readsInPlace
        let disk = try DiskStorage(url: try DiskBenchmarkFolder.make(name), options: options)
        let urls = (0..<httpResponseCount).map { URL(string: "http://bench.invalid/responses/\($0)")! }
        try store(httpBody, in: disk, at: urls)
        return (disk, urls)
    }

    /// `HTTPCache.value(for:)` over a `MemoryStorage` of the same records, against reading the
    /// records from that storage directly: the cache's own work on a hit (finding the record,
    /// checking its freshness), which `http.cache.hit.64k` pays on top of the disk.
    static var httpMemoryHit: Benchmark {
        Benchmark(name: "http.cache.hit.memory", baseline: "memory-records") {
            let memory = MemoryStorage<URL, HTTPCacheRecord>()
            let urls = (0..<httpResponseCount).map { URL(string: "http://bench.invalid/responses/\($0)")! }
            for url in urls { memory.set(freshRecord(of: httpBody), forKey: url) }
            let cache = HTTPSource().cache(in: memory)
            let probes = DataSet(count: httpResponseCount, valueByteCount: 0).randomIndices(httpHits * 8)
            return Workloads(
                operations: probes.count,
                subject: { try await readThroughCache(cache, urls: urls, probes: probes) },
                baseline: {
                    var sum = 0
                    for index in probes { sum &+= memory.value(forKey: urls[index])?.body.count ?? -1 }
                    blackHole(sum)
                }
            )
        }
    }

    /// The body of every stored response.
    static var httpBody: Data { Data((0..<httpBodyByteCount).map { UInt8(truncatingIfNeeded: $0 &* 31) }) }

    /// A response with `body`, fresh for ever.
    static func freshRecord(of body: Data) -> HTTPCacheRecord {
        HTTPCacheRecord(
            body: body,
            entityTag: "\"1\"",
            cacheControl: "max-age=31536000",
            received: Date(),
            freshUntil: .distantFuture
        )
    }

    /// Stores `body` as a response fresh for ever at each of `urls`; synchronous, as a setup is.
    private static func store(
        _ body: Data,
        in disk: DiskStorage,
        at urls: [URL]
    ) throws {
        for url in urls {
            try disk.set(HTTPCacheRecordCodec().encode(freshRecord(of: body)), forKey: url.absoluteString)
        }
    }

    static func readSynchronously(
        _ disk: DiskStorage,
        urls: [URL],
        probes: [Int]
    ) throws {
        var sum = 0
        for index in probes {
            let record = try disk.value(forKey: urls[index].absoluteString).map(HTTPCacheRecordCodec().decode)
            sum &+= record?.body.count ?? -1
        }
        blackHole(sum)
    }

    // `@concurrent` for the reason given at `disk.get.1k.async`: the loop runs on the global
    // executor as a server task would.
    @concurrent
    static func readThroughCache<Records>(
        _ cache: HTTPCache<Records>,
        urls: [URL],
        probes: [Int]
    ) async throws(StorageError) {
        var sum = 0
        for index in probes {
            sum &+= try await cache.value(for: urls[index]).count
        }
        blackHole(sum)
    }
}

extension Goal {
    /// What StrataHTTP's cache aims for, from the issue that asked for it.
    static var http: [Goal] {
        [.ratio(of: "http.cache.hit.64k", atMost: 1.3), .ratio(of: "http.cache.hit.64k.hop", atMost: 1.3)]
    }
}
