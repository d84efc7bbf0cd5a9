import Foundation
import Observation
import StrataTestSupport
import Testing

@testable import Strata

/// `changes()` and `ObservedValue` through the combinators that keep keys: mapped values and
/// codecs, read-only views and shards (every shard's, merged).
@Suite(.onTestThreads) struct CombinatorChangesTests {
    struct City: Codable, Sendable, Equatable {
        var name: String
        var population: Int
    }

    @Test func aCodecOverADiskStorageTellsItsChanges() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let disk = try DiskStorage(url: folder.child("cities"))
        let cities = disk.json(City.self)
        let readOnly = cities.readOnly()
        let stream = cities.changes()
        let readOnlyStream = readOnly.changes()

        try await cities.set(City(name: "Kharkiv", population: 1_421_000), forKey: "kharkiv")
        try await cities.set(City(name: "Lviv", population: 717_000), forKey: "lviv")
        try await cities.removeValue(forKey: "kharkiv")

        let expected = ["kharkiv set", "lviv set", "kharkiv removed"]
        #expect(await StorageChangeTests.first(3, of: stream) == expected)
        #expect(await StorageChangeTests.first(3, of: readOnlyStream) == expected)
    }

    @Test func aShardedStorageMergesTheChangesOfEveryShard() async throws {
        let shards = (0..<4).map { _ in MemoryStorage<String, Int>() }
        let sharded = Strata.sharded(across: shards)
        let stream = sharded.changes()
        let keys = (0..<40).map { "key \($0)" }

        for (number, key) in keys.enumerated() { try await sharded.set(number, forKey: key) }
        for key in keys { try await sharded.removeValue(forKey: key) }
        let changes = await StorageChangeTests.first(80, of: stream)

        #expect(Set(shards.map(\.count)) == [0])
        #expect(Set(keys.map { sharded.shardIndex(forKey: $0) }).count == 4)
        #expect(changes.count == 80)
        for key in keys {
            // One key lives in one shard: its changes keep their order.
            #expect(changes.filter { $0.hasPrefix(key + " ") } == ["\(key) set", "\(key) removed"])
        }
    }

    @Test func aMergedStreamThatEndsStopsListeningToEveryShard() async throws {
        let shards = (0..<3).map { _ in MemoryStorage<String, Int>() }
        let sharded = Strata.sharded(across: shards)
        let listening = Task {
            for await _ in sharded.changes() {}
        }
        #expect(await eventually(within: .seconds(10)) { shards.allSatisfy { $0.changeListenerCount == 1 } })

        listening.cancel()
        await listening.value

        #expect(await eventually(within: .seconds(10)) { shards.allSatisfy { $0.changeListenerCount == 0 } })
    }

    @MainActor
    @Test func anObservedValueFollowsAKeyThroughACodecOverAShardedDisk() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let shards = try (0..<2).map { try DiskStorage(url: folder.child("shard \($0)")) }
        let cities = Strata.sharded(across: shards).json(City.self)
        let observed = cities.observedValue(forKey: "lviv")

        #expect(await waitUntil({ observed.readCount >= 1 }, observing: { _ = observed.value }))
        #expect(observed.value == nil)
        let lviv = City(name: "Lviv", population: 717_000)
        try await Task.detached { try await cities.set(lviv, forKey: "lviv") }.value

        #expect(await waitUntil({ observed.value == lviv }, observing: { _ = observed.value }))
        try await Task.detached { try await cities.removeValue(forKey: "lviv") }.value
        #expect(
            await waitUntil({ observed.value == nil && observed.readCount >= 3 }, observing: { _ = observed.value })
        )
    }

    /// Waits, through Observation, until `condition` holds; false after ten seconds without it.
    @MainActor
    private func waitUntil(_ condition: () -> Bool, observing read: () -> Void) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let (changed, signal) = AsyncStream<Void>.makeStream()
            withObservationTracking(read) { signal.yield() }
            if condition() { return true }
            let timeout = Task {
                try? await Task.sleep(for: .milliseconds(50))
                signal.yield()
            }
            var iterator = changed.makeAsyncIterator()
            _ = await iterator.next()
            timeout.cancel()
        }
        return condition()
    }
}
