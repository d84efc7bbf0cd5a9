import StrataTestSupport
import Testing

@testable import Strata

/// A shard's dictionary finds keys by the hash they carry: equal keys meet, keys whose hashes
/// collide stay apart, and the dictionary grows and shrinks as with plain keys.
@Suite(.onTestThreads) struct HashedKeyTests {
    @Test func keysThatShareAHashStayApartAndEqualKeysMeet() {
        var entries: [HashedKey<String>: Int] = [:]
        entries[HashedKey("a", hash: 7)] = 1
        entries[HashedKey("b", hash: 7)] = 2
        entries[HashedKey("a", hash: 7)] = 3

        #expect(entries.count == 2)
        #expect(entries[HashedKey("a", hash: 7)] == 3)
        #expect(entries[HashedKey("b", hash: 7)] == 2)
        #expect(entries[HashedKey("c", hash: 7)] == nil)
    }

    @Test func aDictionaryOfManyKeysFindsEachThroughGrowthAndRemoval() {
        let keys = (0..<20_000).map { "key-\($0)" }
        var entries: [HashedKey<String>: Int] = [:]
        for (position, key) in keys.enumerated() { entries[HashedKey(key, hash: key.hashValue)] = position }
        for (position, key) in keys.enumerated() where position.isMultiple(of: 2) {
            entries.removeValue(forKey: HashedKey(key, hash: key.hashValue))
        }

        #expect(entries.count == 10_000)
        let misplaced = keys.enumerated().filter { position, key in
            entries[HashedKey(key, hash: key.hashValue)] != (position.isMultiple(of: 2) ? nil : position)
        }
        #expect(misplaced.isEmpty)
    }
}
