import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Per-entry lifetimes pass through the key and value mappings, the codecs, a memory layer over
/// a disk and shards, as `LifetimeStorage` promises.
@Suite(.onTestThreads) struct CombinatorLifetimeTests {
    struct City: Codable, Equatable {
        var name: String
    }

    /// A memory layer over a disk, both on `clock`, and a way to throw the disk's folder away.
    struct Layers {
        let folder: TemporaryFolder
        let memory: MemoryStorage<String, Data>
        let disk: DiskStorage

        init(clock: ManualClock, timeToLive: Duration? = nil) throws {
            folder = try TemporaryFolder()
            memory = MemoryStorage<String, Data>(timeToLive: timeToLive, clock: clock)
            var options = DiskStorage.Options()
            options.clock = clock
            options.timeToLive = timeToLive
            disk = try DiskStorage(url: folder.url, options: options)
        }
    }

    @Test func aLifetimeSetThroughACodecOverTwoLayersEndsInBoth() async throws {
        let clock = ManualClock()
        let layers = try Layers(clock: clock)
        defer { layers.folder.remove() }
        let cities = layers.memory.combined(with: layers.disk).json(City.self)

        try await cities.set(City(name: "Lviv"), forKey: "home", timeToLive: .seconds(1))

        #expect(layers.memory.lifetime(forKey: "home") == .remaining(.seconds(1)))
        #expect(layers.disk.lifetime(forKey: "home") == .remaining(.seconds(1)))
        #expect(try await cities.lifetime(forKey: "home") == .remaining(.seconds(1)))
        #expect(try await cities.valueWithLifetime(forKey: "home")?.value == City(name: "Lviv"))
        clock.advance(by: .milliseconds(1500))
        #expect(layers.memory.value(forKey: "home") == nil)
        #expect(try await layers.disk.value(forKey: "home") == nil)
        #expect(try await cities.value(forKey: "home") == nil)
    }

    @Test func anUpdateGivesTheFrontTheLifetimeTheBackKeptOrGave() async throws {
        let clock = ManualClock()
        let layers = try Layers(clock: clock, timeToLive: .seconds(60))
        defer { layers.folder.remove() }
        let cities = layers.memory.combined(with: layers.disk).json(City.self).mapKeys { (id: Int) in "city-\(id)" }

        try await cities.set(City(name: "Lviv"), forKey: 1, timeToLive: .seconds(10))
        clock.advance(by: .seconds(3))
        try await cities.update(forKey: 1) { $0?.name = "Lwów" }
        #expect(layers.memory.lifetime(forKey: "city-1") == .remaining(.seconds(7)))
        #expect(layers.disk.lifetime(forKey: "city-1") == .remaining(.seconds(7)))
        #expect(
            layers.memory.value(forKey: "city-1").map { String(decoding: $0, as: UTF8.self) } == #"{"name":"Lwów"}"#
        )

        try await cities.update(forKey: 2, lifetime: .unlimited) { $0 = City(name: "Odesa") }
        try await cities.set(City(name: "Kyiv"), forKey: 3)
        clock.advance(by: .seconds(3600))
        #expect(layers.memory.lifetime(forKey: "city-2") == .unlimited)
        #expect(layers.disk.lifetime(forKey: "city-2") == .unlimited)
        #expect(try await cities.value(forKey: 2) == City(name: "Odesa"))
        #expect(try await cities.value(forKey: 3) == nil, "a value given the default lived an hour")
        #expect(try await cities.value(forKey: 1) == nil)
    }

    @Test func shardsKeepEachValuesLifetimeAndRemoveTheirExpiredValues() async throws {
        let clock = ManualClock()
        let shards = (0..<3).map { _ in MemoryStorage<String, Data>(clock: clock) }
        let storage = sharded(across: shards)
        for index in 0..<30 {
            try await storage.set(Data([UInt8(index)]), forKey: "k\(index)", timeToLive: .seconds(index < 10 ? 1 : 100))
        }
        #expect(try await storage.lifetime(forKey: "k3") == .remaining(.seconds(1)))
        clock.advance(by: .seconds(2))
        #expect(try await storage.removeExpired() == 10)
        #expect(try await storage.value(forKey: "k3") == nil)
        #expect(try await storage.lifetime(forKey: "k20") == .remaining(.seconds(98)))
    }

    @Test func aSingleKeyAndADefaultKeepTheLifetimeOfWhatIsStored() async throws {
        let clock = ManualClock()
        let memory = MemoryStorage<String, Int>(clock: clock)
        let score = memory.singleKey("score")
        let counts = memory.defaulting(to: 0)

        try await score.set(7, forKey: (), timeToLive: .seconds(5))
        #expect(try await score.lifetime(forKey: ()) == .remaining(.seconds(5)))
        #expect(memory.lifetime(forKey: "score") == .remaining(.seconds(5)))
        try await score.update(forKey: (), lifetime: .remaining(.seconds(2))) { $0 = ($0 ?? 0) + 1 }
        #expect(try await score.valueWithLifetime(forKey: ())?.value == 8)
        #expect(try await score.valueWithLifetime(forKey: ())?.lifetime == .remaining(.seconds(2)))

        // The default has no lifetime; an update that starts from it gives the result one.
        #expect(try await counts.lifetime(forKey: "visits") == nil)
        #expect(try await counts.value(forKey: "visits") == 0)
        try await counts.update(forKey: "visits", lifetime: .remaining(.seconds(3))) { $0 = ($0 ?? -1) + 1 }
        #expect(memory.value(forKey: "visits") == 1)
        #expect(try await counts.lifetime(forKey: "visits") == .remaining(.seconds(3)))
        try await counts.set(5, forKey: "later", timeToLive: .seconds(1))

        clock.advance(by: .milliseconds(3500))
        // Removing the expired values of one key's view removes every key's.
        #expect(try await score.removeExpired() == 3)
        #expect(memory.count == 0)
        #expect(try await score.value() == nil)
        #expect(try await counts.value(forKey: "visits") == 0)  // expired: the default again
        #expect(try await counts.value(forKey: "later") == 0)
    }

    @Test func aBackedStorageRemovesTheExpiredValuesOfItsFrontOnly() async throws {
        let clock = ManualClock()
        let front = MemoryStorage<String, Int>(clock: clock)
        let back = MemoryStorage<String, Int>(clock: clock)
        back.set(1, forKey: "a", timeToLive: .seconds(1))
        let backed = front.backed(by: back)
        try await backed.set(2, forKey: "b", timeToLive: .seconds(1))
        clock.advance(by: .seconds(2))
        #expect(try await backed.removeExpired() == 1)
        #expect(front.count == 0)
        #expect(back.count == 1)  // never written by the backed storage, so not swept by it either
    }

    @Test func aPushingStorageGivesBothLayersTheLifetimeAndUpdatesThemInTurn() async throws {
        let clock = ManualClock()
        let front = MemoryStorage<String, Int>(clock: clock)
        let back = MemoryStorage<String, Int>(clock: clock)
        let pushing = front.pushing(to: back)

        try await pushing.set(1, forKey: "a", timeToLive: .seconds(5))
        #expect(front.lifetime(forKey: "a") == .remaining(.seconds(5)))
        #expect(back.lifetime(forKey: "a") == .remaining(.seconds(5)))
        try await pushing.update(forKey: "a", lifetime: .remaining(.seconds(2))) { $0 = ($0 ?? 0) + 1 }
        #expect(front.value(forKey: "a") == 2 && back.value(forKey: "a") == 2)
        #expect(try await pushing.lifetime(forKey: "a") == .remaining(.seconds(2)))
        #expect(back.lifetime(forKey: "a") == .remaining(.seconds(2)))

        // Concurrent updates through the pushing storage lose none, in either layer.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 {
                group.addTask { try await pushing.update(forKey: "count") { $0 = ($0 ?? 0) + 1 } }
            }
            try await group.waitForAll()
        }
        #expect(front.value(forKey: "count") == 100 && back.value(forKey: "count") == 100)

        // A body that throws writes nothing to either layer.
        struct Refused: Error {}
        await #expect(throws: StorageError.self) {
            try await pushing.update(forKey: "count") { (value: inout Int?) throws -> Void in
                value = 0
                throw Refused()
            }
        }
        #expect(front.value(forKey: "count") == 100 && back.value(forKey: "count") == 100)

        clock.advance(by: .seconds(3))
        #expect(try await pushing.removeExpired() == 1)
        #expect(front.value(forKey: "a") == nil && back.value(forKey: "a") == nil)
    }
}
