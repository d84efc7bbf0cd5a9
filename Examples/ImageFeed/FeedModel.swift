import Foundation
public import Observation
public import Strata
public import StrataObjects

// snippet: image-feed-model
/// What a feed screen shows, as an `@Observable` model: the saved posts, newest first (a
/// ``LiveQuery``, which follows the store), the images loaded so far and the last error.
@MainActor
@Observable
public final class FeedModel {
    /// The posts, newest first; they follow the store, so a refresh shows up by itself.
    public let feed: LiveQuery<Post>
    /// The images loaded so far, by post.
    public private(set) var thumbnails: [Post.ID: Thumbnail] = [:]
    /// Whether a refresh is under way.
    public private(set) var isRefreshing = false
    /// What went wrong last, for a banner; `nil` after a success.
    public private(set) var lastError: StorageError?

    @ObservationIgnored private let data: FeedDataLayer

    /// Creates the model of `data`'s feed. Nothing is read until a view reads ``posts``.
    public init(data: FeedDataLayer) {
        self.data = data
        self.feed = data.posts.liveQuery(sortedBy: [SortDescriptor(\.id, order: .reverse)])
    }

    /// The saved posts, newest first.
    public var posts: [Post] { feed.results }
    // snippet end

    /// Downloads the feed; on failure the saved posts stay on screen and ``lastError`` says why.
    public func refresh() async {
        isRefreshing = true
        defer { isRefreshing = false }
        do {
            try await data.refreshFeed()
            lastError = nil
        } catch {
            lastError = error
        }
    }

    // snippet: image-feed-load-thumbnail
    /// Loads the image of `post` into ``thumbnails``, when a cell appears.
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
    /// Gives memory back when the app leaves the screen: the images shown go, and the data
    /// layer's memory cache keeps a quarter.
    public func enteredBackground() {
        thumbnails.removeAll()
        data.enteredBackground()
    }
    // snippet end
}
