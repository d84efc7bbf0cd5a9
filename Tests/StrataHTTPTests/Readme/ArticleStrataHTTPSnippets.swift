import AsyncHTTPClient
import Foundation
import Strata
import StrataAsyncHTTPClient
import StrataHTTP

// The examples of the StrataHTTP and StrataAsyncHTTPClient catalog pages, each between
// `// snippet: name` and `// snippet end`; StrataTests' ReadmeTests checks that the pages show
// exactly these lines. Compiled, not run: they download (HTTPCacheTests and HTTPSourceTests run
// the same calls against a local server).

/// StrataHTTP.md: an HTTP cache on disk in front of URLSession.
func articleHTTPCache(folder: URL, url: URL) async throws {
    // snippet: http-cache
    let records = try DiskStorage(url: folder).httpCacheRecords()
    let feeds = HTTPSource(timeout: .seconds(10))
        .cache(in: records)
        .coordinated()
    let feed = try await feeds.value(for: url)
    // snippet end
    _ = feed
}

#if AsyncHTTPClient
/// StrataAsyncHTTPClient.md: the same cache over AsyncHTTPClient's shared client.
func articleAsyncHTTPClient(folder: URL) throws {
    // snippet: async-http-client
    let feeds = HTTPSource(client: .shared, timeout: .seconds(10))
        .cache(in: try DiskStorage(url: folder).httpCacheRecords())
        .coordinated()
    // snippet end
    _ = feeds
}
#endif
