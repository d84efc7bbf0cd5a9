public import Foundation
public import Strata
public import StrataHTTP
public import StrataObjects

/// The data layer of an app that shows a feed of posts with an image each: what the article
/// "Strata in an app" walks through.
///
/// - The posts live in an ``ObjectStore`` under Application Support, where the user's data
///   belongs: the app shows the last feed it saw when it starts offline.
/// - The images come from the server through a chain of providers: the download is validated,
///   kept on disk in Caches (excluded from backups), decoded, kept decoded in a memory cache
///   limited by pixel bytes, and coordinated, so a screenful of cells that ask for one image
///   downloads it once.
public final class FeedDataLayer: Sendable {
    /// The posts, as the app last saw them.
    public let posts: ObjectStore<Post>
    /// The downloaded image files.
    public let imageFiles: DiskStorage
    /// The decoded images, limited by their pixel bytes.
    public let decodedImages: MemoryStorage<URL, Thumbnail>
    /// Every image request goes here: memory, then disk, then the server, once per image at a time.
    public let images: AnyProvider<URL, Thumbnail>
    /// Where the feed and the images are.
    public let server: URL
    private let source: HTTPSource

    /// Opens the stores under `data` and `caches` and builds the image chain.
    ///
    /// - Parameters:
    ///   - server: The base URL of the feed server.
    ///   - data: Where the posts live; Application Support in an app.
    ///   - caches: Where the image files live; Caches in an app.
    ///   - transport: How requests are sent; URLSession by default.
    ///   - decodedImageBytes: The most pixel bytes the memory cache keeps.
    ///   - memoryPressure: Where memory warnings come from; the platform's by default, a
    ///     source of your own in tests.
    /// - Throws: ``StorageError`` when a store cannot be opened.
    public init(
        server: URL,
        data: DiskStorage.Location = .applicationSupport,
        caches: DiskStorage.Location = .caches,
        transport: any HTTPTransport = URLSessionTransport.shared,
        decodedImageBytes: Int = 32 << 20,
        memoryPressure: MemoryPressureSource = .system
    ) throws(StorageError) {
        self.server = server
        let source = HTTPSource(transport: transport, timeout: .seconds(15), maximumBodyByteCount: 8 << 20)
        self.source = source

        // snippet: image-feed-folders
        var fileOptions = DiskStorage.Options(maximumByteCount: 100 << 20)
        fileOptions.isExcludedFromBackup = true  // Caches is not backed up; this keeps it so anywhere
        fileOptions.fileProtection = .completeUntilFirstUserAuthentication  // readable in the background
        let imageFiles = try DiskStorage(folder: "images", in: caches, options: fileOptions)
        // snippet end

        // snippet: image-feed-chain
        let decodedImages = MemoryStorage<URL, Thumbnail>(
            maximumCost: decodedImageBytes,  // 32 MB of pixels by default
            cost: { $0.byteCount },
            memoryPressure: .trimming(keepingOnWarning: 0.25, from: memoryPressure)
        )

        let images =
            source
            .mapValues { data, _ in
                try Thumbnail.validate(data)  // never keep a bad download
                return data
            }
            .cache(imageFiles.mapKeys { (url: URL) in url.absoluteString })
            .mapValues { data, _ in try Thumbnail(decoding: data) }
            .cache(decodedImages)
            .coordinated()  // one download per image, however many cells ask
        // snippet end

        self.imageFiles = imageFiles
        self.decodedImages = decodedImages
        self.images = images.eraseToAnyProvider()
        self.posts = try ObjectStore<Post>(folder: "posts", in: data)
    }

    /// Downloads the feed and saves it: new and changed posts are written, posts the server no
    /// longer lists are deleted. Returns how many posts the feed has.
    ///
    /// - Throws: ``StorageError``: `sourceFailed`, `timedOut` or `capacityExceeded` from the
    ///   download (the saved posts are left as they were), `decodingFailed` when the feed is not
    ///   the JSON expected.
    @discardableResult
    public func refreshFeed() async throws(StorageError) -> Int {
        // snippet: image-feed-refresh
        let url = server.appendingPathComponent("feed.json")
        let body = try await source.value(for: url)
        let feed: FeedResponse
        do {
            feed = try JSONDecoder().decode(FeedResponse.self, from: body)
        } catch {
            throw StorageError(
                .decodingFailed,
                key: url,
                storage: "FeedDataLayer",
                message: "the feed is not the JSON expected",
                underlying: error
            )
        }
        try await posts.save(contentsOf: feed.posts)
        let listed = Set(feed.posts.map(\.id))
        try await posts.delete(withIDs: try await posts.ids().filter { !listed.contains($0) })
        return feed.posts.count
        // snippet end
    }

    /// The decoded image of `post`.
    ///
    /// - Throws: ``StorageError``: as ``refreshFeed()`` for the download, `decodingFailed` when
    ///   the server's file is not an image (it is then not kept), `cancelled` when the task is.
    public func thumbnail(for post: Post) async throws(StorageError) -> Thumbnail {
        try await images.value(for: server.appendingPathComponent(post.imagePath))
    }

    // snippet: image-feed-upgrade
    /// Rewrites every post saved by an older version of the app at the current version; call it
    /// once after an update, off the critical path. Reads do not wait for it: they migrate what
    /// they read as they go.
    @discardableResult
    public func upgrade() async throws(StorageError) -> MigrationReport {
        try await posts.migrate()
    }
    // snippet end

    // snippet: image-feed-data-background
    /// What the app does when it goes to the background: the system ends the apps that use
    /// the most memory first, so the decoded images go down to a quarter, as on a memory warning.
    /// The files stay, so they come back without the network.
    public func enteredBackground() {
        decodedImages.relieveMemoryPressure(.warning)
    }
    // snippet end
}
