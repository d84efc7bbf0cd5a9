import Foundation
import HTTPTypes
import Strata
import StrataHTTP
import _StrataInternals

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

/// The seed's image example: an image origin answers over HTTP; the provider downloads the
/// images, validates them, keeps them on disk and in memory, and coalesces concurrent requests.
///
/// The origin is an ``HTTPTransport`` in this process (``ImageOrigin``), so the demo needs no
/// server and no network: what the chain does above the transport (status checks, limits, the
/// disk and memory layers, coalescing) is what an app's URLSession transport would see.
struct ImageDemo {
    /// Concurrent requests in each burst.
    var burst: Int
    /// How many images the origin serves.
    var imageCount = 8
    /// How long the origin takes to send an image, standing in for a large download.
    var latency: Duration = .milliseconds(50)

    func run() async throws {
        let origin = ImageOrigin(
            images: (0..<imageCount).map { Image.pgm(width: 64, height: 64, seed: $0) },
            latency: latency
        )
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "strata-demo-images-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: folder) }
        try await show(origin: origin, folder: folder)
    }

    private func show(origin: ImageOrigin, folder: URL) async throws {
        let ids = (0..<imageCount).map { ImageID(name: "photo-\($0)", url: origin.url("/images/photo-\($0).pgm")) }
        print("\nImages over HTTP: an origin in this process (\(origin.host)) serves \(imageCount) images,")
        print("taking \(format(latency)) each. The provider: network source -> validate -> disk cache ->")
        print("memory cache -> coordinated(); a disk folder at \(folder.path).")

        let disk = try DiskStorage(url: folder)
        var images = makeImageProvider(transport: origin, disk: disk)
        try await burst("Burst 1, cold caches:", over: ids, images, origin: origin)
        try await burst("Burst 2, same provider:", over: ids, images, origin: origin)
        images = makeImageProvider(transport: origin, disk: try DiskStorage(url: folder))
        try await burst("Burst 3, after a restart (empty memory, same disk):", over: ids, images, origin: origin)

        print("\nFailures are never cached, so each attempt reaches the network again:")
        let broken = ImageID(name: "broken", url: origin.url("/images/broken.pgm"))
        let missing = ImageID(name: "missing", url: origin.url("/images/missing.pgm"))
        for (attempt, id) in [broken, broken, missing].enumerated() {
            let before = origin.totalHits
            do {
                _ = try await images.value(for: id)
            } catch {
                let hits = origin.totalHits - before
                print("  \(attempt + 1). \(id): \(error.code) after \(hits) network request: \(error.message)")
            }
        }
        let downloads = ids.map { origin.hits($0.url.path) }.reduce(0, +)
        print("\nIn all: \(burst * 3) requests for the \(imageCount) images made \(downloads) downloads.")
    }

    /// The chain of the seed's example, innermost first.
    private func makeImageProvider(
        transport: some HTTPTransport,
        disk: DiskStorage
    ) -> some Provider<ImageID, Image> {
        HTTPSource(transport: transport, timeout: .seconds(5), maximumBodyByteCount: 1024 * 1024)
            .mapIDs { (id: ImageID) in id.url }
            // Validate before caching: bytes that do not decode are never stored.
            .mapValues { data, _ in (data: data, image: try Image(pgm: data)) }
            .cache(
                disk.mapKeys { (id: ImageID) in id.name },
                toStorage: { downloaded, _ in downloaded.data },
                // A file that no longer decodes is fetched again.
                fromStorage: { data, _ in try? (data: data, image: Image(pgm: data)) }
            )
            .mapValues { downloaded, _ in downloaded.image }
            .cache(MemoryStorage<ImageID, Image>())
            .coordinated()
    }

    private func burst(
        _ title: String,
        over ids: [ImageID],
        _ images: some Provider<ImageID, Image>,
        origin: ImageOrigin
    ) async throws {
        let before = origin.totalHits
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
        let hits = origin.totalHits - before
        print("\n\(title)")
        print(
            "  \(burst) concurrent requests for \(ids.count) images: \(hits) reached the network "
                + "(\(pixels / burst) pixels each, \(format(elapsed)))"
        )
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds =
            Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.0f ms", milliseconds)
    }
}

/// An image origin answering in this process: `/images/photo-N.pgm` for each image, a truncated
/// image at `/images/broken.pgm`, 404 for anything else, each answer after `latency`. Counts the
/// requests per path. Any task may use it.
final class ImageOrigin: HTTPTransport {
    let host = "images.strata.invalid"
    private let images: [[UInt8]]
    private let latency: Duration
    private let counts = LockedState<[String: Int]>([:])

    init(images: [[UInt8]], latency: Duration) {
        self.images = images
        self.latency = latency
    }

    /// The URL of `path` at this origin.
    func url(_ path: String) -> URL {
        URL(string: "https://\(host)\(path)")!
    }

    /// Requests for `path` so far.
    func hits(_ path: String) -> Int {
        counts.withLock { $0[path, default: 0] }
    }

    /// Requests for any path so far.
    var totalHits: Int {
        counts.withLock { $0.values.reduce(0, +) }
    }

    func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse {
        let path = request.path ?? "/"
        counts.withLock { $0[path, default: 0] += 1 }
        // A slow network; the sleep throws if the request is cancelled.
        try await Task.sleep(for: latency)
        guard path.hasPrefix("/images/") else { return Self.response(.notFound) }
        let name = path.dropFirst("/images/".count)
        if name == "broken.pgm" {
            return Self.response(.ok, body: Array("P5\n64 64\n255\ntruncated".utf8))
        }
        guard name.hasPrefix("photo-"), name.hasSuffix(".pgm"),
            let index = Int(name.dropFirst("photo-".count).dropLast(".pgm".count)), images.indices.contains(index)
        else {
            return Self.response(.notFound)
        }
        return Self.response(.ok, body: images[index])
    }

    private static func response(_ status: HTTPResponse.Status, body: [UInt8] = []) -> HTTPTransportResponse {
        var head = HTTPResponse(status: status)
        if status == .ok { head.headerFields[.contentType] = "image/x-portable-graymap" }
        return HTTPTransportResponse(head: head, body: Data(body))
    }
}
