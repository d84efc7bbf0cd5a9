import Foundation
import Logging
import Strata
import StrataTestSupport
import StrataTesting
import Testing

// The README's tour and the examples of the "Getting started" articles (Strata.docc), each
// between `// snippet: name` and `// snippet end`: they compile with the test target, so the
// documents cannot drift from the API, and ReadmeTests checks that each document shows exactly
// these lines. Most run as tests; examples that would touch the user's folders or the network
// are compiled only.

@Suite(.onTestThreads) struct ReadmeSnippets {
    @Test func tourRuns() async throws {
        // snippet: tour
        struct City: Codable, Sendable {
            var name: String
            var population: Int
        }

        // A memory cache with limits and a time to live. It is synchronous: no await.
        let memory = MemoryStorage<String, City>(maximumCount: 1_000, timeToLive: .seconds(300))
        memory.set(City(name: "Kharkiv", population: 1_421_125), forKey: "kharkiv")
        print(memory.value(forKey: "kharkiv")?.name ?? "absent")  // Kharkiv

        // Files on disk, one checksummed file per value, stored as JSON.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-tour")
        let files = try DiskStorage(url: folder)
        let disk = files.json(City.self)
        try await disk.set(City(name: "Lviv", population: 717_273), forKey: "lviv")

        // Layers: memory in front of disk. A disk hit is copied into memory.
        let cities = memory.combined(with: disk)
        print(try await cities.value(forKey: "lviv")?.population ?? 0)  // 717273
        print(memory.containsValue(forKey: "lviv"))  // true

        // A provider: a slow source, cached, with concurrent requests coalesced into one call.
        let lengths = AnyProvider { (word: String) in
            try await Task.sleep(for: .milliseconds(10))
            return word.count
        }
        .cache(MemoryStorage<String, Int>())
        .coordinated()
        async let first = lengths.value(for: "strata")
        async let second = lengths.value(for: "strata")
        print(try await first + second)  // 12

        // What the memory layer did: hits, misses, writes, evictions, the hit ratio.
        print(memory.statistics)
        try await files.removeAll()
        // snippet end
        #expect(memory.statistics.hits == 1)
        #expect(try await lengths.value(for: "strata") == 6)
    }

    @Test func genericCodeTakesAnyStorage() async throws {
        // snippet: warm-any-storage
        func warm(_ cache: some Storage<String, City>, with cities: [String: City]) async throws {
            for (key, city) in cities {
                try await cache.set(city, forKey: key)
            }
        }
        // snippet end
        let cache = MemoryStorage<String, City>()
        try await warm(cache, with: ["kharkiv": .kharkiv])
        #expect(cache.value(forKey: "kharkiv") == .kharkiv)
    }

    @Test func boundedMemoryCache() throws {
        let data = Data(count: 100)
        let banner = Data(count: 10)
        // snippet: bounded-memory-cache
        let avatars = MemoryStorage<String, Data>(
            maximumCount: 1_000,  // a scan-resistant, adaptive policy picks what goes
            maximumCost: 50_000_000,  // a Data value costs its byte count by default
            timeToLive: .seconds(300)  // a default; set(_:forKey:timeToLive:) overrides it
        )
        avatars.set(data, forKey: "ada")
        avatars.set(banner, forKey: "banner", timeToLive: .seconds(10))
        avatars.trim(toCost: 10_000_000)  // e.g. when the app goes to the background
        print(avatars.statistics)  // hits 0, misses 0 (hit ratio 0.0%), writes 2, …

        let clock = ManualClock()
        let sessions = MemoryStorage<String, String>(timeToLive: .seconds(60), clock: clock)
        sessions.set("token", forKey: "s1")
        clock.advance(by: .seconds(60))
        print(sessions.value(forKey: "s1") ?? "expired")  // expired
        // snippet end
        #expect(avatars.statistics.writes == 2)
        #expect(sessions.value(forKey: "s1") == nil)
    }

    @Test func filesAnAppShips() throws {
        let scratch = try TemporaryFolder()
        defer { scratch.remove() }
        var options = DiskStorage.Options(maximumByteCount: 200_000_000)
        options.fileProtection = .completeUntilFirstUserAuthentication  // readable by a widget while locked
        options.isExcludedFromBackup = true  // a cache in a shared container is backed up otherwise
        options.folderAttributes = RecordingFolderAttributes(containers: ["group.com.example.feed": scratch.url])
        let shared = try DiskStorage(folder: "thumbnails", in: .appGroup("group.com.example.feed"), options: options)
        try shared.set(Data([1]), forKey: "a")
        #expect(shared.url.standardizedFileURL == scratch.child("thumbnails").standardizedFileURL)
    }

    @Test func memoryPressure() throws {
        // snippet: memory-pressure
        let thumbnails = MemoryStorage<String, Data>(
            maximumCost: 50_000_000,
            memoryPressure: .trimming(keepingOnWarning: 0.25)  // keep a quarter on a warning
        )
        let drafts = MemoryStorage<String, String>(maximumCount: 100, memoryPressure: .ignored)
        print(thumbnails.statistics.pressureEvictions)  // entries given back so far
        // snippet end

        for index in 0..<8 { thumbnails.set(Data(count: 100), forKey: "t\(index)") }
        drafts.set("Dear Ada", forKey: "letter")
        thumbnails.relieveMemoryPressure(.warning)
        drafts.relieveMemoryPressure(.warning)
        #expect(thumbnails.count == 2)
        #expect(thumbnails.statistics.pressureEvictions == 6)
        #expect(drafts.count == 1)
    }

    @Test func expiry() throws {
        let page = Data("<html></html>".utf8)
        // snippet: expiry
        // Sessions that nobody uses for 15 minutes go; each read or write renews them.
        let sessions = MemoryStorage<String, Data>(expiry: .afterAccess(.seconds(900)))

        // Each response lives as long as its own max-age says; none stores nothing.
        struct Response: Sendable {
            var body: Data
            var maxAge: Duration?
        }
        let responses = MemoryStorage<String, Response>(
            expiry: Expiry { _, response in
                response.maxAge.map(Lifetime.remaining) ?? .remaining(.zero)
            }
        )
        responses.set(Response(body: page, maxAge: .seconds(60)), forKey: "/index.html")
        print(responses.lifetime(forKey: "/index.html") ?? "gone")  // remaining(60.0 seconds)

        var options = DiskStorage.Options()
        options.expiry = .afterAccess(.seconds(86_400))  // kept in each file's modification time
        // snippet end
        #expect(sessions.expiry != nil)
        #expect(options.expiry != nil)
        responses.set(Response(body: page, maxAge: nil), forKey: "/index.html")
        #expect(responses.value(forKey: "/index.html") == nil)
    }

    /// Compiled, not run: it writes to the user's caches folder.
    func diskStorage(png: Data) async throws {
        // snippet: disk-storage
        let cities = try DiskStorage(folder: "cities", in: .caches).json(City.self)
        try await cities.set(.kharkiv, forKey: "kharkiv")

        var options = DiskStorage.Options(maximumByteCount: 200_000_000, timeToLive: .seconds(86_400))
        options.isDurable = true  // also fsync file and folder: survives power loss
        let thumbnails = try DiskStorage(folder: "thumbnails", in: .caches, options: options)
        try await thumbnails.set(png, forKey: "https://example.com/a.png")  // the I/O runs off this actor
        let report = try thumbnails.verify()  // checks every checksum, changes nothing
        print(report.isSound)
        // snippet end
    }

    /// Compiled, not run: it writes to an app group's container (on Linux, the user's data folder).
    func sharedContainer() throws {
        // snippet: file-protection
        var options = DiskStorage.Options(maximumByteCount: 200_000_000)
        options.fileProtection = .completeUntilFirstUserAuthentication  // readable by a widget while locked
        options.isExcludedFromBackup = true  // a cache in a shared container is backed up otherwise
        let shared = try DiskStorage(folder: "thumbnails", in: .appGroup("group.com.example.feed"), options: options)
        // snippet end
        _ = shared
    }

    @Test func atomicUpdates() async throws {
        // snippet: atomic-updates
        let counters = MemoryStorage<String, Int>()
        try counters.update(forKey: "visits") { $0 = ($0 ?? 0) + 1 }
        try await counters.defaulting(to: 0).update(forKey: "visits") { $0 += 1 }  // through any chain
        // snippet end
        #expect(counters.value(forKey: "visits") == 2)
    }

    @Test func codecsAndTransforms() async throws {
        // snippet: codecs
        let bytes = MemoryStorage<String, Data>()
        let cities = bytes.json(City.self)  // Storage<String, City>
        try await cities.set(City(name: "Kharkiv", foundationYear: 1654), forKey: "kharkiv")

        let notes = bytes.string(encoding: .utf8)  // Storage<String, String>
        let settings = bytes.jsonDictionary()  // Storage<String, [String: JSONValue]>
        let plist = bytes.propertyList(City.self, format: .xml)  // property lists

        enum CityKey: String { case kharkiv, lviv }
        let keyed = cities.mapKeys(to: CityKey.self)  // Storage<CityKey, City>
        let names = cities.mapValues(
            reading: { city in city.name },  // stored → yours
            writing: { name in City(name: name, foundationYear: 0) }  // yours → stored
        )
        // snippet end
        #expect(try await keyed.value(forKey: .kharkiv) == City(name: "Kharkiv", foundationYear: 1654))
        #expect(try await names.value(forKey: "kharkiv") == "Kharkiv")
        _ = (notes, settings, plist)
    }

    @Test func layers() async throws {
        let remoteCities = MemoryStorage<String, City>()
        let defaults = MemoryStorage<String, String>()
        let auditLog = MemoryStorage<String, City>()
        // snippet: layers
        let cache = MemoryStorage<String, City>()
            .combined(with: MemoryStorage<String, City>())  // a second, larger layer
            .combined(with: remoteCities)  // any Storage<String, City>

        let bundled = MemoryStorage<String, String>()
            .backed(by: defaults.readOnly())  // a read-only back
            .readOnly()  // ReadOnlyStorage: no writes at all
        let audited = cache.pushing(to: auditLog.writeOnly())
        // snippet end
        try await audited.set(.kharkiv, forKey: "kharkiv")
        #expect(auditLog.value(forKey: "kharkiv") == .kharkiv)
        #expect(try await bundled.value(forKey: "missing") == nil)
    }

    @Test func oneValuePairsAndRecovery() async throws {
        let bytes = MemoryStorage<String, Data>()
        let names = MemoryStorage<String, String>()
        let ages = MemoryStorage<String, Int>()
        let quotes = MemoryStorage<String, Double>()
        // snippet: one-value-pairs-and-recovery
        let settings = bytes.json([String: String].self).singleKey("settings")
        try await settings.set(["theme": "dark"])
        let current = try await settings.value()

        let profiles = zip(names, ages)  // Storage<String, (String, Int)>
        try await profiles.set(("Ada", 36), forKey: "ada")

        let prices = quotes.defaulting(to: 0)  // absent reads as 0; errors still throw
        let tolerant = quotes.fallback { error in  // decide what a failed read returns
            if error.code == .decodingFailed { return nil }
            throw error
        }
        // snippet end
        #expect(current == ["theme": "dark"])
        #expect(ages.value(forKey: "ada") == 36)
        #expect(try await prices.value(forKey: "x") == 0)
        #expect(try await tolerant.value(forKey: "x") == nil)
    }

    @Test func bulk() async throws {
        struct Product: Sendable, Equatable {
            var id: Int
            static let placeholder = Product(id: 0)
        }
        struct Catalog {
            func products(_ ids: [Int]) async throws -> [Int: Product] {
                Dictionary(uniqueKeysWithValues: ids.map { ($0, Product(id: $0)) })
            }
        }
        let database = MemoryStorage<String, Int>()
        let catalog = Catalog()
        // snippet: bulk
        let prices = MemoryStorage<String, Int>().combined(with: database)
        try await prices.setValues(["apple": 3, "pear": 4])  // or [(key, value)] pairs, in order
        let row = try await prices.values(forKeys: ["apple", "plum", "pear"])  // [3, nil, 4]
        let found = try await prices.presentValues(forKeys: ["apple", "plum"])  // ["apple": 3]

        let products = BatchProvider { (ids: [Int]) in try await catalog.products(ids) }  // [Int: Product]
            .interject { id in id == 0 ? .placeholder : nil }  // answered without the source
            .cache(MemoryStorage<Int, Product>())
            .coordinated()
        let page = try await products.values(for: [7, 12, 40, 0])
        // snippet end
        #expect(row == [3, nil, 4])
        #expect(found == ["apple": 3])
        #expect(page.map(\.id) == [7, 12, 40, 0])
        #expect(database.count == 2)
    }

    @Test func evictionPolicy() throws {
        // snippet: eviction-policy
        let cache = MemoryStorage<String, Data>(maximumCount: 10_000, evictionPolicy: .s3FIFO)
        // snippet end
        #expect(cache.evictionPolicy == .s3FIFO)
    }

    @Test func errors() async throws {
        let cities = MemoryStorage<String, Data>().json(City.self)
        cities.base.set(Data("not json".utf8), forKey: "kharkiv")
        // snippet: errors
        do {
            let city = try await cities.value(forKey: "kharkiv")
            print(city?.name ?? "absent")
        } catch {  // typed throws: error is a StorageError
            switch error.code {
            case .decodingFailed: print("damaged value for \(error.key ?? "?"): \(error.message)")
            case .io, .corrupted: print("storage trouble: \(error)")
            default: throw error
            }
        }
        // snippet end
    }

    @Test func observability() throws {
        // snippet: observability
        let logger = Logger(label: "myapp.cache")
        let avatars = MemoryStorage<String, Data>(
            maximumCost: 50_000_000,
            logger: logger,  // eviction storms, once per 10 s window; no values, keys only at debug
            metrics: StorageMetrics(prefix: "myapp.avatars")  // hits, misses, evictions, bytes, latency
        )
        var options = DiskStorage.Options(maximumByteCount: 500_000_000)
        options.logger = logger  // damaged files dropped, with the reason
        options.metrics = StorageMetrics(prefix: "myapp.thumbnails")
        print(avatars.statistics.hitRatio)  // always kept, metrics or not
        // snippet end
        #expect(avatars.statistics.hits == 0)
        #expect(options.metrics?.prefix == "myapp.thumbnails")
    }
}

// snippet: behaviour-suite
@Test func myStorageBehavesLikeAStorage() async throws {
    let counting = StorageBehaviourSuite<MyStorage>.Counting(value: { $0 }, count: { $0 })
    let suite = StorageBehaviourSuite(keys: ["a", "b", "c"], values: [1, 2, 3], counting: counting) {
        MyStorage()  // a fresh, empty storage for each check
    }
    try await suite.run()  // throws one BehaviourViolation listing every broken rule
}
// snippet end

/// The storage of the testing example: a dictionary behind a lock.
final class MyStorage: UpdatableStorage {
    private let values = MemoryStorage<String, Int>()

    func value(forKey key: String) async throws(StorageError) -> Int? { values.value(forKey: key) }
    func set(_ value: Int, forKey key: String) async throws(StorageError) { values.set(value, forKey: key) }
    func removeValue(forKey key: String) async throws(StorageError) { values.removeValue(forKey: key) }

    func update<Result>(
        forKey key: String,
        _ body: (inout Int?) throws -> Result
    ) async throws(StorageError) -> Result {
        try values.update(forKey: key, body)
    }
}
