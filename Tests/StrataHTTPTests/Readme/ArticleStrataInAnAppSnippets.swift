import Foundation
import ImageFeed
import Observation
import Strata
import StrataHTTP
import StrataObjects

#if canImport(SwiftUI)
import SwiftUI
#endif

// The blocks of "Strata in an app" (Strata.docc), each between `// snippet: name` and
// `// snippet end`; StrataTests' ReadmeTests checks that the article shows exactly these lines.
// They are parts of Examples/ImageFeed without its doc comments, compiled here against the
// example's own types (`Thumbnail`, `FeedDataLayer`, `Post`), so the article cannot drift from
// the API; ImageFeedExampleTests runs the example itself. The view compiles where SwiftUI exists.

/// What the data layer's initializer does with the folders.
func articleImageFeedFolders(caches: DiskStorage.Location) throws -> DiskStorage {
    // snippet: image-feed-folders
    var fileOptions = DiskStorage.Options(maximumByteCount: 100 << 20)
    fileOptions.isExcludedFromBackup = true  // Caches is not backed up; this keeps it so anywhere
    fileOptions.fileProtection = .completeUntilFirstUserAuthentication  // readable in the background
    let imageFiles = try DiskStorage(folder: "images", in: caches, options: fileOptions)
    // snippet end
    return imageFiles
}

/// The data layer's chain of providers for images.
func articleImageFeedChain(
    source: HTTPSource,
    imageFiles: DiskStorage,
    decodedImageBytes: Int,
    memoryPressure: MemoryPressureSource
) throws -> some Provider<URL, Thumbnail> {
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
    return images
}

enum ArticlePost {
    // snippet: image-feed-post
    public struct Post: Codable, Identifiable, Sendable, Hashable, VersionedObject {
        public var id: Int
        public var author: String
        public var caption: String
        public var imagePath: String  // "image" in version 1
        public var likeCount: Int  // new in version 2

        public static let schemaVersion = 2
        public static let migrations = ObjectMigrations<Post>()
            .migratingJSON(from: 1) { post in
                post["imagePath"] = post.removeValue(forKey: "image")
                post["likeCount"] = 0
            }

        public init(id: Int, author: String, caption: String, imagePath: String, likeCount: Int) {
            self.id = id
            self.author = author
            self.caption = caption
            self.imagePath = imagePath
            self.likeCount = likeCount
        }
    }
    // snippet end
}

/// The members of the example's `FeedDataLayer` that the article shows, over the example's `Post`.
final class ArticleFeedDataLayer: Sendable {
    /// What the server's `/feed.json` holds.
    struct FeedResponse: Codable, Sendable {
        var posts: [Post]
    }

    let posts: ObjectStore<Post>
    let decodedImages: MemoryStorage<URL, Thumbnail>
    let server: URL
    private let source: HTTPSource

    init(posts: ObjectStore<Post>, decodedImages: MemoryStorage<URL, Thumbnail>, server: URL, source: HTTPSource) {
        self.posts = posts
        self.decodedImages = decodedImages
        self.server = server
        self.source = source
    }

    // snippet: image-feed-upgrade
    public func upgrade() async throws(StorageError) -> MigrationReport {
        try await posts.migrate()
    }
    // snippet end

    func refreshFeed() async throws(StorageError) -> Int {
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

    // snippet: image-feed-data-background
    public func enteredBackground() {
        decodedImages.relieveMemoryPressure(.warning)
    }
    // snippet end
}

enum ArticleFeedModel {
    // snippet: image-feed-model
    @MainActor
    @Observable
    public final class FeedModel {
        public let feed: LiveQuery<Post>
        public private(set) var thumbnails: [Post.ID: Thumbnail] = [:]
        public private(set) var isRefreshing = false
        public private(set) var lastError: StorageError?

        @ObservationIgnored private let data: FeedDataLayer

        public init(data: FeedDataLayer) {
            self.data = data
            self.feed = data.posts.liveQuery(sortedBy: [SortDescriptor(\.id, order: .reverse)])
        }

        public var posts: [Post] { feed.results }
        // snippet end

        // snippet: image-feed-load-thumbnail
        public func loadThumbnail(for post: Post) async {
            guard thumbnails[post.id] == nil else { return }
            do {
                thumbnails[post.id] = try await data.thumbnail(for: post)
            } catch {
                if error.code != .cancelled { lastError = error }  // cancelled: the cell scrolled away
            }
        }
        // snippet end

        // snippet: image-feed-model-background
        public func enteredBackground() {
            thumbnails.removeAll()
            data.enteredBackground()
        }
        // snippet end
    }
}

#if canImport(SwiftUI)
/// The example's `FeedView`, whose body the article shows.
struct ArticleFeedView: View {
    @State private var model: FeedModel
    @Environment(\.scenePhase) private var scenePhase

    init(model: FeedModel) {
        _model = State(initialValue: model)
    }

    // snippet: image-feed-view
    public var body: some View {
        List(model.posts) { post in
            HStack {
                if let thumbnail = model.thumbnails[post.id] {
                    Text("\(thumbnail.width)×\(thumbnail.height)")
                }
                Text(post.caption)
            }
            .task { await model.loadThumbnail(for: post) }
        }
        .refreshable { await model.refresh() }
        .task { await model.refresh() }
        .onChange(of: scenePhase) { _, phase in
            if phase == .background { model.enteredBackground() }
        }
    }
    // snippet end
}
#endif
