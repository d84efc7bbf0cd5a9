import Foundation
import Strata
import StrataObjects
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The figures for ``ObjectStore`` on its folder backend. A save is compared with `JSONEncoder`
/// (the store's formatting) plus a raw POSIX write of a temporary file and a `rename` into the same
/// `<2 hex>/<2 hex>/<ID>.json` path; a fetch with `open`/`read`/`close` plus `JSONDecoder`; a query
/// over 100,000 objects with filtering the same decoded array in memory by the same `#Predicate`.
extension Benchmark {
    static let objectCount = 1_000
    static let objectQueryCount = 100_000

    static var objects: [Benchmark] {
        [
            objectsSave, objectsFetch(readsInPlace: true), objectsFetch(readsInPlace: false), objectsFetchMigrated,
            objectsQuery,
        ]
    }

    static var objectsSave: Benchmark {
        Benchmark(name: "objects.save", baseline: "json+raw-posix") {
            let objects = BenchObject.make(objectCount)
            let store = try ObjectStore<BenchObject>(url: try DiskBenchmarkFolder.make("objects-save"))
            let raw = try RawObjectFiles(name: "raw-objects-save", ids: objects.map(\.id))
            try await store.save(contentsOf: objects)
            try raw.saveAll(objects)
            return Workloads(
                operations: objects.count,
                subject: { try await store.save(contentsOf: objects) },
                baseline: { try raw.saveAll(objects) }
            )
        }
    }

    /// Fetches by ID, awaited one after another from a task on no actor, as a server's handler
    /// fetches: the page cache holds every file, so with the default options each record is read
    /// on the caller's thread. `.hop`: without `ObjectFolder.Options.readsInPlace`, every read
    /// hops to Strata's I/O threads and back, as a caller on an actor's does.
    static func objectsFetch(readsInPlace: Bool) -> Benchmark {
        let suffix = readsInPlace ? "" : ".hop"
        return Benchmark(name: "objects.fetch" + suffix, baseline: "raw-posix+json") {
            let objects = BenchObject.make(objectCount)
            let store = try ObjectStore<BenchObject>(
                url: try DiskBenchmarkFolder.make("objects-fetch" + suffix),
                folderOptions: ObjectFolder.Options(readsInPlace: readsInPlace)
            )
            let raw = try RawObjectFiles(name: "raw-objects-fetch" + suffix, ids: objects.map(\.id))
            try await store.save(contentsOf: objects)
            try raw.saveAll(objects)
            let ids = objects.map(\.id).shuffled()
            return Workloads(
                operations: ids.count,
                subject: { try await fetchAll(ids, from: store) },
                baseline: {
                    for index in ids.indices {
                        blackHole(try raw.fetch(index).score)
                    }
                }
            )
        }
    }

    /// Fetches of objects stored at version 1 through a store of their version-2 type, which
    /// migrates each one as it reads it (a typed step), against fetching the same files through
    /// a store of the version-1 type: what a lazy migration adds to a read.
    static var objectsFetchMigrated: Benchmark {
        Benchmark(name: "objects.fetch.migrated", baseline: "objects.fetch-unmigrated") {
            let objects = BenchObject.make(objectCount)
            let url = try DiskBenchmarkFolder.make("objects-fetch-migrated")
            let plain = try ObjectStore<BenchObject>(url: url, options: .init(keepsObjectsInMemory: false))
            try await plain.save(contentsOf: objects)
            let migrating = try ObjectStore<BenchObjectV2>(url: url, options: .init(keepsObjectsInMemory: false))
            let ids = objects.map(\.id).shuffled()
            return Workloads(
                operations: ids.count,
                subject: { try await fetchEach(ids, from: migrating) },
                baseline: { try await fetchEach(ids, from: plain) }
            )
        }
    }

    // `@concurrent` for the reason given at `disk.get.1k.async`: the loop runs on the global
    // executor as a server task would.
    @concurrent
    private static func fetchAll(_ ids: [UUID], from store: ObjectStore<BenchObject>) async throws {
        for id in ids {
            guard let object = try await store.object(withID: id) else {
                throw BenchmarkFailure("lost \(id)")
            }
            blackHole(object.score)
        }
    }

    /// `fetchAll` for any object type, for the figure whose two sides read different types: both
    /// sides pay for the same unspecialized generic loop (which costs objects.fetch about 5 µs a
    /// read over the loop above).
    @concurrent
    private static func fetchEach<Object: BenchScored>(
        _ ids: [UUID],
        from store: ObjectStore<Object>
    ) async throws where Object.ID == UUID {
        for id in ids {
            guard let object = try await store.object(withID: id) else {
                throw BenchmarkFailure("lost \(id)")
            }
            blackHole(object.score)
        }
    }

    static var objectsQuery: Benchmark {
        Benchmark(name: "objects.query.100k", baseline: "in-memory-filter") {
            let objects = BenchObject.make(objectQueryCount)
            let folder = try DiskBenchmarkFolder.make("objects-query")
            let writer = try ObjectStore<BenchObject>(url: folder, options: .init(prettyPrinted: false))
            try await writer.save(contentsOf: objects)
            let store = try ObjectStore<BenchObject>(url: folder)
            let predicate = #Predicate<BenchObject> { $0.score > 900 && $0.tags.contains("red") }
            let loaded = try await store.all()  // loads the store's in-memory copy
            guard loaded.count == objects.count else { throw BenchmarkFailure("loaded \(loaded.count)") }
            return Workloads(
                operations: objects.count,
                subject: { blackHole(try await store.objects(matching: predicate).count) },
                baseline: { blackHole(try loaded.filter { try predicate.evaluate($0) }.count) },
                reference: (
                    "objects(where:)",
                    {
                        let found = try await store.objects(where: { $0.score > 900 && $0.tags.contains("red") })
                        blackHole(found.count)
                    }
                )
            )
        }
    }
}

/// The object the figures store: about 250 bytes of JSON.
struct BenchObject: Codable, Identifiable, Sendable {
    var id: UUID
    var title: String
    var body: String
    var tags: [String]
    var score: Int
    var created: Date

    static func make(_ count: Int) -> [BenchObject] {
        var generator = SplitMix64(seed: 0x0B1E)
        let tags = ["red", "green", "blue", "cyan"]
        return (0..<count).map { index in
            BenchObject(
                id: UUID(),
                title: "object \(index)",
                body: String(repeating: "lorem ipsum ", count: 8),
                tags: tags.filter { _ in generator.next() % 2 == 0 },
                score: Int(generator.next() % 1000),
                created: Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
            )
        }
    }
}

/// What a fetch benchmark reads of an object, so the decode is not optimized away.
protocol BenchScored: Codable & Identifiable & Sendable {
    var score: Int { get }
}

extension BenchObject: BenchScored {}

/// ``BenchObject`` at version 2: `title` renamed `name`, `score` a `Double`.
struct BenchObjectV2: VersionedObject, BenchScored {
    static let schemaVersion = 2
    static let migrations = ObjectMigrations<BenchObjectV2>()
        .migrating(from: 1, as: BenchObject.self) { old in
            BenchObjectV2(
                id: old.id,
                name: old.title,
                body: old.body,
                tags: old.tags,
                rating: Double(old.score),
                created: old.created
            )
        }

    var id: UUID
    var name: String
    var body: String
    var tags: [String]
    var rating: Double
    var created: Date

    var score: Int { Int(rating) }
}

/// The baseline: the same JSON through Foundation and bare POSIX calls on the same layout.
private struct RawObjectFiles {
    let paths: [String]
    let temporaryPaths: [String]

    init(name: String, ids: [UUID]) throws {
        let root = try DiskBenchmarkFolder.make(name).path
        var paths: [String] = []
        var temporaryPaths: [String] = []
        for id in ids {
            let text = id.uuidString
            let folder = "\(root)/\(text.prefix(2))/\(text.dropFirst(2).prefix(2))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            paths.append("\(folder)/\(text).json")
            temporaryPaths.append("\(folder)/.tmp-\(text)")
        }
        self.paths = paths
        self.temporaryPaths = temporaryPaths
    }

    func saveAll(_ objects: [BenchObject]) throws {
        for (index, object) in objects.enumerated() {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(object)
            let descriptor = open(temporaryPaths[index], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw BenchmarkFailure.system("open", temporaryPaths[index]) }
            let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            guard written == data.count else { throw BenchmarkFailure.system("write", temporaryPaths[index]) }
            guard rename(temporaryPaths[index], paths[index]) == 0 else {
                throw BenchmarkFailure.system("rename", paths[index])
            }
        }
    }

    func fetch(_ index: Int) throws -> BenchObject {
        let descriptor = open(paths[index], O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchmarkFailure.system("open", paths[index]) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw BenchmarkFailure.system("fstat", paths[index]) }
        var data = Data(count: Int(info.st_size))
        let count = data.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count == data.count else { throw BenchmarkFailure.system("read", paths[index]) }
        return try JSONDecoder().decode(BenchObject.self, from: data)
    }
}

extension Goal {
    /// What `ObjectStore` aims for, from the issue that asked for it.
    static var objects: [Goal] {
        [("objects.save", 1.3), ("objects.fetch", 1.3), ("objects.fetch.migrated", 2)].map {
            .ratio(of: $0, atMost: $1)
        }
    }
}
