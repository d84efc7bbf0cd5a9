import Foundation
import Strata

// The examples of the articles in Strata.docc other than "Getting started" (whose examples are in
// ReadmeSnippets.swift), each between `// snippet: name` and `// snippet end`; ReadmeTests checks
// that each page shows exactly these lines. Compiled, not run: they open folders in the user's
// caches or call sources that do not exist here; the tests of each combinator run the same calls.

/// The catalog page's example (Strata.md).
func articleStrataOverview(kharkiv: City) async throws {
    // snippet: overview
    let cities = try DiskStorage(folder: "cities", in: .caches).json(City.self)
    let cache = MemoryStorage<String, City>().combined(with: cities)
    try await cache.set(kharkiv, forKey: "kharkiv")
    let city = try await cache.value(forKey: "kharkiv")
    // snippet end
    _ = city
}

/// "Composing storages": three layers, and a provider cached on disk and in memory.
func articleComposingStorages(
    remoteCities: some Storage<String, City>,
    download: @escaping @Sendable (URL) async throws -> Data
) async throws {
    // snippet: composing-layers
    let memory = MemoryStorage<String, City>(maximumCount: 1_000, timeToLive: .seconds(300))
    let disk = try DiskStorage(folder: "cities", in: .caches).json(City.self)
    let cities =
        memory
        .combined(with: disk)
        .combined(with: remoteCities)

    let city = try await cities.value(forKey: "kharkiv")  // memory, then disk, then remote
    // snippet end
    _ = city

    // snippet: composing-provider
    let images = AnyProvider { (url: URL) in try await download(url) }
        .cache(try DiskStorage(folder: "images", in: .caches).mapKeys { (url: URL) in url.absoluteString })
        .cache(MemoryStorage<URL, Data>())
        .coordinated()
    // snippet end
    _ = images
}

/// "Coalescing and cancellation": one download per URL at a time.
func articleCoalescing(download: @escaping @Sendable (URL) async throws -> Data) {
    // snippet: coalescing
    let images = AnyProvider { (url: URL) in try await download(url) }
        .cache(MemoryStorage<URL, Data>())
        .coordinated()
    // snippet end
    _ = images
}

/// "Observability": metrics for a memory cache, a disk cache and a coordinated provider.
func articleObservability(download: @escaping @Sendable (URL) async throws -> Data) throws {
    // snippet: observability-metrics
    let cache = MemoryStorage<String, Data>(
        maximumCount: 10_000,
        metrics: StorageMetrics(prefix: "myapp.avatars")
    )
    var options = DiskStorage.Options(maximumByteCount: 500_000_000)
    options.metrics = StorageMetrics(prefix: "myapp.thumbnails")
    let images = AnyProvider { (url: URL) in try await download(url) }
        .coordinated(metrics: StorageMetrics(prefix: "myapp.downloads"))
    // snippet end
    _ = (cache, options, images)
}

/// "Which thread runs what": the synchronous API runs on the calling thread.
func articleSynchronousAPI(png: Data, url: String) throws {
    // snippet: synchronous-api
    let thumbnails = try DiskStorage(folder: "thumbnails", in: .caches)
    try thumbnails.set(png, forKey: url)  // the I/O runs here, on this thread
    // snippet end
}

/// "Which thread runs what": a view model on the main actor that awaits a disk read.
@MainActor final class ArticleThumbnailModel {
    /// The app's image type, made from a file's bytes.
    struct Image {
        var png: Data
    }

    let thumbnails: DiskStorage
    var image: Image?

    init(thumbnails: DiskStorage) {
        self.thumbnails = thumbnails
    }

    // snippet: asynchronous-api
    @MainActor func show(_ url: String) async throws {
        let png = try await thumbnails.value(forKey: url)  // read on Strata's I/O threads
        image = png.map(Image.init)  // back on the main actor
    }
    // snippet end
}
