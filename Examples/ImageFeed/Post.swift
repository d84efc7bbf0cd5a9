import Foundation
import Strata
public import StrataObjects

// snippet: image-feed-post
/// One post of the feed, as the app keeps it.
///
/// Version 1 of the app stored the image's path under `image` and had no likes; version 2
/// renamed the field and added ``likeCount`` without a default. Posts a version-1 app saved are
/// read through the migration, once, and ``FeedDataLayer/upgrade()`` rewrites them.
public struct Post: Codable, Identifiable, Sendable, Hashable, VersionedObject {
    /// The server's number for the post.
    public var id: Int
    /// Who posted it.
    public var author: String
    /// Its text.
    public var caption: String
    /// The image's path on the server.
    public var imagePath: String  // "image" in version 1
    /// How many people liked it.
    public var likeCount: Int  // new in version 2

    /// The version posts are written at.
    public static let schemaVersion = 2
    /// How a version-1 post becomes a version-2 one.
    public static let migrations = ObjectMigrations<Post>()
        .migratingJSON(from: 1) { post in
            post["imagePath"] = post.removeValue(forKey: "image")
            post["likeCount"] = 0
        }

    /// Creates a post.
    public init(id: Int, author: String, caption: String, imagePath: String, likeCount: Int) {
        self.id = id
        self.author = author
        self.caption = caption
        self.imagePath = imagePath
        self.likeCount = likeCount
    }
}
// snippet end

/// What the server's `/feed.json` holds.
struct FeedResponse: Codable, Sendable {
    var posts: [Post]
}
