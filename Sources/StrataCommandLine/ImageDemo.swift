import AsyncHTTPClient
import Foundation
import LocalHTTPServer
import NIOPosix
import Strata
import StrataAsyncHTTPClient
import StrataHTTP

/// Names an image: what the app asks for, and the URL that serves it.
struct ImageID: Hashable, Sendable, CustomStringConvertible {
    var name: String
    var url: URL

    var description: String { name }
}

/// A decoded greyscale image. A class, as decoded images usually are, so the memory layer shares
/// one object among every request. Immutable, so any task may use it.
final class Image: Sendable {
    let width: Int
    let height: Int
    let pixels: [UInt8]

    /// Decodes a binary PGM ("P5", 8-bit); throws ``ImageDecodingError`` for anything else.
    init(pgm data: Data) throws {
        let bytes = [UInt8](data)
        // The header is four whitespace-separated fields: magic, width, height, maximum value.
        var fields: [String] = []
        var index = 0
        while fields.count < 4, index < bytes.count {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A { index += 1 }
            let start = index
            while index < bytes.count, bytes[index] != 0x20, bytes[index] != 0x0A { index += 1 }
            fields.append(String(decoding: bytes[start..<index], as: UTF8.self))
        }
        index += 1
        guard fields.count == 4, fields[0] == "P5", let width = Int(fields[1]), let height = Int(fields[2]),
            fields[3] == "255", width > 0, height > 0
        else {
            throw ImageDecodingError(reason: "not an 8-bit binary PGM")
        }
        guard bytes.count - index == width * height else {
            throw ImageDecodingError(reason: "expected \(width * height) pixels, found \(max(bytes.count - index, 0))")
        }
        self.width = width
        self.height = height
        self.pixels = Array(bytes[index...])
    }

    /// Encodes a `width` × `height` gradient, shifted by `seed`, as a binary PGM.
    static func pgm(width: Int, height: Int, seed: Int) -> [UInt8] {
        var bytes = Array("P5\n\(width) \(height)\n255\n".utf8)
        for y in 0..<height {
            for x in 0..<width {
                bytes.append(UInt8(truncatingIfNeeded: x * 4 + y * 2 + seed * 29))
            }
        }
        return bytes
    }
}

/// Downloaded bytes that are not an image.
struct ImageDecodingError: Error, CustomStringConvertible {
    var reason: String

    var description: String { reason }
}

/// The seed's image example done for real: a local server serves images; the provider downloads
/// them, validates them, keeps them on disk and in memory, and coalesces concurrent requests.
struct ImageDemo {
    /// Concurrent requests in each burst.
    var burst: Int
    /// How many images the server serves.
    var imageCount = 8
    /// How long the server takes to send an image, standing in for a large download.
    var latency: Duration = .milliseconds(50)

    func run() async throws {
        let server = try await startServer()
        // Ours, so ours to shut down: `HTTPSource` never shuts its client down.
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "strata-demo-images-\(UUID().uuidString)"
        )
        do {
            try await show(server: server, client: client, folder: folder)
        } catch {
            try? await client.shutdown()
            await server.stop()
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        try await client.shutdown()
        await server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    private func show(server: LocalHTTPServer, client: HTTPClient, folder: URL) async throws {
        let ids = (0..<imageCount).map { ImageID(name: "photo-\($0)", url: server.url("/images/photo-\($0).pgm")) }
        print("\nImages over HTTP: a server on 127.0.0.1:\(server.port) (started by this demo) serves \(imageCount)")
        print("images, taking \(format(latency)) each. The provider: network source -> validate -> disk cache ->")
        print("memory cache -> coordinated(); a disk folder at \(folder.path).")

        let disk = try DiskStorage(url: folder)
        var images = makeImageProvider(client: client, disk: disk)
        try await burst("Burst 1, cold caches:", over: ids, images, server: server)
        try await burst("Burst 2, same provider:", over: ids, images, server: server)
        images = makeImageProvider(client: client, disk: try DiskStorage(url: folder))
        try await burst("Burst 3, after a restart (empty memory, same disk):", over: ids, images, server: server)

        print("\nFailures are never cached, so each attempt reaches the network again:")
        let broken = ImageID(name: "broken", url: server.url("/images/broken.pgm"))
        let missing = ImageID(name: "missing", url: server.url("/images/missing.pgm"))
        for (attempt, id) in [broken, broken, missing].enumerated() {
            let before = server.totalHits
            do {
                _ = try await images.value(for: id)
            } catch {
                let hits = server.totalHits - before
                print("  \(attempt + 1). \(id): \(error.code) after \(hits) network request: \(error.message)")
            }
        }
        let downloads = ids.map { server.hits($0.url.path) }.reduce(0, +)
        print("\nIn all: \(burst * 3) requests for the \(imageCount) images made \(downloads) downloads.")
    }

    /// The chain of the seed's example, innermost first.
    private func makeImageProvider(
        client: HTTPClient,
        disk: DiskStorage
    ) -> some AsyncProvider<ImageID, Image> {
        HTTPSource(client: client, timeout: .seconds(5), maximumBodyByteCount: 1024 * 1024)
            .mapID { (id: ImageID) in id.url }
            // Validate before caching: bytes that do not decode are never stored.
            .mapValue { data, _ in (data: data, image: try Image(pgm: data)) }
            .cache(
                disk.mapKeys { (id: ImageID) in id.name },
                toStorage: { downloaded, _ in downloaded.data },
                // A file that no longer decodes is fetched again.
                fromStorage: { data, _ in try? (data: data, image: Image(pgm: data)) }
            )
            .mapValue { downloaded, _ in downloaded.image }
            .cache(MemoryStorage<ImageID, Image>())
            .coordinated()
    }

    private func burst(
        _ title: String,
        over ids: [ImageID],
        _ images: some AsyncProvider<ImageID, Image>,
        server: LocalHTTPServer
    ) async throws {
        let before = server.totalHits
        let clock = ContinuousClock()
        let start = clock.now
        let pixels = try await withThrowingTaskGroup(of: Int.self) { group in
            for request in 0..<burst {
                let id = ids[request % ids.count]
                group.addTask { try await images.value(for: id).pixels.count }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = clock.now - start
        let hits = server.totalHits - before
        print("\n\(title)")
        print(
            "  \(burst) concurrent requests for \(ids.count) images: \(hits) reached the network "
                + "(\(pixels / burst) pixels each, \(format(elapsed)))"
        )
    }

    private func startServer() async throws -> LocalHTTPServer {
        let latency = latency
        let images = (0..<imageCount).map { Image.pgm(width: 64, height: 64, seed: $0) }
        return try await LocalHTTPServer.start { request in
            guard request.path.hasPrefix("/images/") else { return .status(404) }
            let name = request.path.dropFirst("/images/".count)
            // A slow network; cancelled if the demo stops the server first.
            try? await Task.sleep(for: latency)
            if name == "broken.pgm" {
                return .respond(status: 200, headers: [], body: Array("P5\n64 64\n255\ntruncated".utf8))
            }
            guard name.hasPrefix("photo-"), name.hasSuffix(".pgm"),
                let index = Int(name.dropFirst("photo-".count).dropLast(".pgm".count)), images.indices.contains(index)
            else {
                return .status(404)
            }
            return .respond(status: 200, headers: [("Content-Type", "image/x-portable-graymap")], body: images[index])
        }
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds =
            Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.0f ms", milliseconds)
    }
}
