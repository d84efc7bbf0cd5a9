import Foundation
import ImageFeed
import LocalHTTPServer
import Observation
import Strata
import StrataHTTP
import StrataObjects
import StrataTestSupport
import Testing
import _StrataInternals

/// The example app's data layer (Examples/ImageFeed), run against a local server as the app
/// would run it: URLSession, folders on disk, an injected memory-pressure source.
@Suite(.onTestThreads) struct ImageFeedExampleTests {
    /// A feed server whose feed, images and failures a test changes as it goes.
    final class FeedServer: Sendable {
        struct State {
            var posts: [Post] = []
            var images: [String: Data] = [:]
            var isFailing = false
            var feedBody: String?
        }

        let state: LockedState<State>
        let server: LocalHTTPServer

        init() async throws {
            let state = LockedState(State())
            self.state = state
            server = try await LocalHTTPServer.start { request in
                let current = state.withLock { $0 }
                if current.isFailing { return .status(503) }
                if request.path == "/feed.json" {
                    if let body = current.feedBody { return .ok(body) }
                    let encoder = JSONEncoder()
                    let body = (try? encoder.encode(["posts": current.posts])) ?? Data()
                    return .respond(status: 200, headers: [("Content-Type", "application/json")], body: Array(body))
                }
                guard let image = current.images[request.path] else { return .status(404) }
                return .respond(status: 200, headers: [("Content-Type", "image/x-portable-pixmap")], body: Array(image))
            }
        }

        var base: URL { server.url("/") }

        /// The app's data layer on this server, its folders in `folder`, over URLSession.
        func open(
            in folder: TemporaryFolder,
            decodedImageBytes: Int = 32 << 20,
            memoryPressure: MemoryPressureSource = MemoryPressureSource()
        ) throws -> FeedDataLayer {
            try FeedDataLayer(
                server: base,
                data: .url(folder.child("data")),
                caches: .url(folder.child("caches")),
                transport: URLSessionTransport(),
                decodedImageBytes: decodedImageBytes,
                memoryPressure: memoryPressure
            )
        }

        /// Publishes `count` posts, each with a `side × side` image of its own colour.
        func publish(_ count: Int, side: Int = 16) -> [Post] {
            let posts = (1...count).map { number in
                Post(
                    id: number,
                    author: "author \(number)",
                    caption: "post \(number)",
                    imagePath: "images/\(number).ppm",
                    likeCount: number * 10
                )
            }
            state.withLock { state in
                state.posts = posts
                for post in posts {
                    state.images["/" + post.imagePath] = Self.image(for: post.id, side: side).ppm
                }
            }
            return posts
        }

        static func image(for number: Int, side: Int = 16) -> Thumbnail {
            Thumbnail(width: side, height: side, red: UInt8(number), green: 0x80, blue: 0xFF)
        }
    }

    /// Waits, on the main actor, until `condition` holds; false after 30 s.
    @MainActor func waitUntil(_ condition: @MainActor () -> Bool) async -> Bool {
        for _ in 0..<3_000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func theFeedAndItsImagesComeThroughTheChainAndTheModelFollows() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let server = try await FeedServer()
        let published = server.publish(3)
        let data = try server.open(in: folder)
        let model = await FeedModel(data: data)
        let changed = LockedState(false)

        let before = await MainActor.run {
            withObservationTracking {
                model.posts
            } onChange: {
                changed.withLock { $0 = true }
            }
        }
        await model.refresh()
        let shown = await waitUntil { model.posts.count == 3 }

        #expect(before.isEmpty)
        #expect(shown)
        #expect(changed.withLock { $0 })
        #expect(await model.posts.map(\.id) == [3, 2, 1])
        #expect(await model.lastError == nil)
        #expect(try await data.posts.all().sorted { $0.id < $1.id } == published)

        // Twenty cells ask for one image at once: one download, one decode, the same image.
        let first = published[0]
        let images = try await withThrowingTaskGroup(of: Thumbnail.self) { group in
            for _ in 0..<20 { group.addTask { try await data.thumbnail(for: first) } }
            return try await group.reduce(into: [Thumbnail]()) { $0.append($1) }
        }
        #expect(images.count == 20)
        #expect(Set(images) == [FeedServer.image(for: 1)])
        #expect(server.server.hits("/images/1.ppm") == 1)

        for post in published { await model.loadThumbnail(for: post) }
        let thumbnails = await model.thumbnails
        #expect(thumbnails.count == 3)
        #expect(thumbnails[2] == FeedServer.image(for: 2))
        #expect(server.server.hits("/images/1.ppm") == 1)
        #expect(data.imageFiles.count == 3)
        await server.server.stop()
    }

    @Test func decodedImagesStayWithinTheirBytesAndAWarningSendsThemBackToDiskNotTheNetwork() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let server = try await FeedServer()
        let published = server.publish(5, side: 100)  // 30,000 pixel bytes each
        let pressure = MemoryPressureSource()
        let data = try server.open(in: folder, decodedImageBytes: 100_000, memoryPressure: pressure)

        for post in published { _ = try await data.thumbnail(for: post) }
        let full = data.decodedImages.statistics

        #expect(full.totalCost <= 100_000)
        #expect(full.count == 3)
        #expect(server.server.totalHits == 5)

        pressure.signal(.warning)
        let trimmed = data.decodedImages.statistics

        #expect(trimmed.totalCost <= 25_000)
        #expect(trimmed.pressureEvictions == UInt64(3 - trimmed.count))

        for post in published {
            #expect(try await data.thumbnail(for: post) == FeedServer.image(for: post.id, side: 100))
        }
        #expect(server.server.totalHits == 5)  // every image came back from disk

        pressure.signal(.critical)
        #expect(data.decodedImages.count == 0)
        data.enteredBackground()
        #expect(data.imageFiles.count == 5)
        await server.server.stop()
    }

    /// What version 1 of the app saved: the image under `image`, no likes.
    struct PostV1: Codable, Identifiable, Sendable {
        var id: Int
        var author: String
        var caption: String
        var image: String
    }

    @Test func anUpdatedAppShowsTheOldFeedOfflineThroughTheMigration() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let old = try ObjectStore<PostV1>(folder: "posts", in: .url(folder.child("data")))
        try await old.save(contentsOf: [
            PostV1(id: 1, author: "ada", caption: "first", image: "images/1.ppm"),
            PostV1(id: 2, author: "grace", caption: "second", image: "images/2.ppm"),
        ])
        let server = try await FeedServer()
        server.state.withLock { $0.isFailing = true }  // offline: every request fails
        let data = try server.open(in: folder)
        let model = await FeedModel(data: data)

        _ = await model.posts
        await model.refresh()
        let shown = await waitUntil { model.posts.count == 2 }

        #expect(shown)
        #expect(await model.lastError?.code == .sourceFailed)
        #expect(
            await model.posts == [
                Post(id: 2, author: "grace", caption: "second", imagePath: "images/2.ppm", likeCount: 0),
                Post(id: 1, author: "ada", caption: "first", imagePath: "images/1.ppm", likeCount: 0),
            ]
        )

        let report = try await data.upgrade()
        let again = try await data.upgrade()
        let file = try #require(
            FileManager.default.enumerator(at: folder.child("data/posts"), includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.first {
                    $0.pathExtension == "json" && $0.lastPathComponent != "strata-objects.json"
                }
        )
        let rewritten = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]

        #expect(report == MigrationReport(migrated: 2, alreadyCurrent: 0))
        #expect(again == MigrationReport(migrated: 0, alreadyCurrent: 2))
        #expect(rewritten?["$schemaVersion"] as? Int == 2)
        #expect(rewritten?["imagePath"] != nil && rewritten?["image"] == nil)
        await server.server.stop()
    }

    @Test func imagesDownloadedOnceComeBackAfterARestartWithoutTheNetwork() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let server = try await FeedServer()
        let published = server.publish(2)
        let first = try server.open(in: folder)
        try await first.refreshFeed()
        for post in published { _ = try await first.thumbnail(for: post) }
        let hits = server.server.totalHits
        server.state.withLock { $0.isFailing = true }

        let second = try server.open(in: folder)  // the app, started again, offline
        let posts = try await second.posts.all().sorted { $0.id < $1.id }
        var images: [Thumbnail] = []
        for post in posts { images.append(try await second.thumbnail(for: post)) }

        #expect(posts == published)
        #expect(images == published.map { FeedServer.image(for: $0.id) })
        #expect(server.server.totalHits == hits)
        #expect(second.decodedImages.count == 2)
        await server.server.stop()
    }

    @Test func aBadDownloadIsAClearErrorAndIsNeverKept() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let server = try await FeedServer()
        var damaged = FeedServer.image(for: 1).ppm
        damaged.removeLast(7)
        let bodies: [String: Data] = [
            "/images/html.ppm": Data("<html>Service moved</html>".utf8),
            "/images/short.ppm": damaged,
            "/images/huge.ppm": Data("P6\n100000 100000\n255\n".utf8) + Data(count: 64),
            "/images/zero.ppm": Data("P6\n0 5\n255\n".utf8),
        ]
        server.state.withLock { $0.images = bodies }
        let data = try server.open(in: folder)
        let expected: [String: ThumbnailError] = [
            "html": .notAnImage, "short": .truncated, "huge": .tooLarge, "zero": .notAnImage,
        ]

        for (name, reason) in expected {
            let post = Post(id: 1, author: "a", caption: "c", imagePath: "images/\(name).ppm", likeCount: 0)
            for _ in 0..<2 {
                let error = await #expect(throws: StorageError.self) { try await data.thumbnail(for: post) }
                #expect(error?.code == .decodingFailed, "\(name)")
                #expect(error?.underlying as? ThumbnailError == reason, "\(name)")
            }
            #expect(server.server.hits("/images/\(name).ppm") == 2, "\(name): a bad download was kept")
        }
        #expect(data.imageFiles.count == 0)
        #expect(data.decodedImages.count == 0)

        // A feed that is not the JSON expected leaves the saved posts as they were.
        let published = server.publish(2)
        try await data.refreshFeed()
        server.state.withLock { $0.feedBody = "{\"posts\": [{\"id\": \"three\"}]}" }
        let error = await #expect(throws: StorageError.self) { try await data.refreshFeed() }

        #expect(error?.code == .decodingFailed)
        #expect(try await data.posts.all().sorted { $0.id < $1.id } == published)
        await server.server.stop()
    }

    @Test func everySwiftBlockOfTheArticleIsCodeOfTheExample() throws {
        let root = repositoryRoot()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/Strata/Strata.docc/StrataInAnApp.md"),
            encoding: .utf8
        )
        let folder = root.appendingPathComponent("Examples/ImageFeed")
        let sources = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
            .map { name in
                // Documentation comments are left out of the article's blocks.
                try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                    .components(separatedBy: "\n")
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("///") }
            }
        let blocks = ExampleBlocks.swiftBlocks(in: article)

        #expect(blocks.count >= 5)
        for block in blocks {
            #expect(
                sources.contains { ExampleBlocks.contains($0, block.lines) },
                "StrataInAnApp.md line \(block.line): the block is not code of Examples/ImageFeed"
            )
        }
        #expect(!ExampleBlocks.contains(sources.flatMap { $0 }, ["let changed = true"]))
    }
}

/// Finds an article's Swift blocks in the example's sources.
enum ExampleBlocks {
    static func swiftBlocks(in text: String) -> [(line: Int, lines: [String])] {
        let lines = text.components(separatedBy: "\n")
        var blocks: [(Int, [String])] = []
        var index = 0
        while index < lines.count {
            guard lines[index].trimmingCharacters(in: .whitespaces) == "```swift" else {
                index += 1
                continue
            }
            var end = index + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" { end += 1 }
            blocks.append((index + 1, Array(lines[(index + 1)..<min(end, lines.count)])))
            index = end + 1
        }
        return blocks
    }

    /// Whether `block` is a run of `source`'s lines, all indented by the same amount more there.
    static func contains(_ source: [String], _ block: [String]) -> Bool {
        guard let first = block.first, !block.isEmpty else { return false }
        let firstIndent = first.prefix { $0 == " " }.count
        for start in source.indices where source[start].hasSuffix(String(first.dropFirst(firstIndent))) {
            let extra = source[start].prefix { $0 == " " }.count - firstIndent
            guard extra >= 0, start + block.count <= source.count else { continue }
            let padding = String(repeating: " ", count: extra)
            let matches = zip(source[start..<(start + block.count)], block).allSatisfy { line, shown in
                shown.isEmpty ? line.trimmingCharacters(in: .whitespaces).isEmpty : line == padding + shown
            }
            if matches { return true }
        }
        return false
    }
}
