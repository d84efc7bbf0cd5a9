import Foundation
import Strata
import StrataTestSupport
import StrataTesting
import Testing

/// sharded(across:) puts each key in one shard chosen by a stable hash, spreads keys evenly, and
/// moves only the new shard's share of keys when a shard is added.
@Suite(.onTestThreads) struct ShardedStorageTests {
    private static let keys = (0..<20_000).map { "user:\($0)" }

    @Test func passesTheBehaviourSuite() async throws {
        let suite = StorageBehaviourSuite(
            keys: ["kharkiv", "kyiv", "lviv", ""],
            values: [1, 2, 3],
            counting: .integers
        ) {
            sharded(across: (0..<3).map { _ in MemoryStorage<String, Int>() })
        }

        try await suite.run()
    }

    @Test func passesTheBehaviourSuiteWithOneShard() async throws {
        let suite = StorageBehaviourSuite(keys: ["a", "b", "c"], values: [1, 2, 3], counting: .integers) {
            sharded(across: [MemoryStorage<String, Int>()])
        }

        try await suite.run()
    }

    @Test func eachKeyLivesInExactlyOneShard() async throws {
        let shards = (0..<4).map { _ in MemoryStorage<String, Int>() }
        let storage = sharded(across: shards)

        for (index, key) in Self.keys.prefix(1_000).enumerated() {
            try await storage.set(index, forKey: key)
        }

        #expect(shards.map(\.count).reduce(0, +) == 1_000)
        for key in Self.keys.prefix(1_000) {
            let holders = shards.indices.filter { shards[$0].value(forKey: key) != nil }
            #expect(holders == [storage.shardIndex(forKey: key)])
        }
    }

    @Test(arguments: [2, 4, 7])
    func keysSpreadEvenly(shardCount: Int) {
        let storage = sharded(across: (0..<shardCount).map { _ in MemoryStorage<String, Int>() })
        var counts = [Int](repeating: 0, count: shardCount)

        for key in Self.keys {
            counts[storage.shardIndex(forKey: key)] += 1
        }

        let expected = Double(Self.keys.count) / Double(shardCount)
        for count in counts {
            #expect(abs(Double(count) - expected) / expected < 0.05, "\(counts)")
        }
    }

    @Test(arguments: [1, 2, 4, 9])
    func addingAShardMovesOnlyItsShareOfKeysAndOnlyToIt(shardCount: Int) {
        let before = sharded(across: (0..<shardCount).map { _ in MemoryStorage<String, Int>() })
        let after = sharded(across: (0...shardCount).map { _ in MemoryStorage<String, Int>() })

        var moved = 0
        var movedElsewhere = 0
        for key in Self.keys where before.shardIndex(forKey: key) != after.shardIndex(forKey: key) {
            moved += 1
            if after.shardIndex(forKey: key) != shardCount { movedElsewhere += 1 }
        }

        let share = Double(moved) / Double(Self.keys.count)
        let expected = 1 / Double(shardCount + 1)
        #expect(abs(share - expected) < 0.015, "moved \(share), expected about \(expected)")
        #expect(movedElsewhere == 0)
    }

    @Test func theShardOfAKeyIsTheSameInEveryProcess() {
        let storage = sharded(across: (0..<8).map { _ in MemoryStorage<String, Int>() })

        // Golden values: a change here would send keys to other shards than older versions did.
        let indices = ["kharkiv", "kyiv", "lviv", "", "user:42"].map(storage.shardIndex(forKey:))

        #expect(indices == Self.goldenIndices)
    }

    private static let goldenIndices = [5, 4, 7, 7, 5]

    @Test func keysSwiftConsidersEqualShareAShard() {
        let storage = sharded(across: (0..<16).map { _ in MemoryStorage<String, Int>() })

        #expect(storage.shardIndex(forKey: "caf\u{E9}") == storage.shardIndex(forKey: "cafe\u{301}"))
    }

    @Test func aCustomHashShardsOtherKeyTypes() async throws {
        let shards = (0..<3).map { _ in MemoryStorage<Int, String>() }
        let storage = sharded(across: shards, hashingKeysWith: { UInt64(bitPattern: Int64($0)) })

        try await storage.set("two", forKey: 2)

        #expect(try await storage.value(forKey: 2) == "two")
        #expect(shards[storage.shardIndex(forKey: 2)].value(forKey: 2) == "two")
    }
}
