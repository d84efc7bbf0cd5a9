import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `removals()` on a DiskStorage tells every value this storage removes, with its key, the size
/// of its file and why.
@Suite(.onTestThreads) struct DiskRemovalTests {
    private static func causes(_ removals: [Removal<String, Int>]) -> [String] {
        removals.map { "\($0.key) \($0.cause)" }
    }

    @Test func replacedRemovedUpdatedAwayAndClearedValuesAreTold() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let stream = storage.removals()
        try await storage.set(Data(repeating: 1, count: 100), forKey: "a")
        let size = try #require(storage.entries().first?.size)

        try await storage.set(Data(repeating: 2, count: 100), forKey: "a")
        try await storage.removeValue(forKey: "a")
        try await storage.set(Data([3]), forKey: "b")
        try await storage.update(forKey: "b") { (value: inout Data?) in value = nil }
        try await storage.set(Data([4]), forKey: "c")
        try await storage.set(Data([5]), forKey: "d")
        try await storage.removeAll()
        let removals = await RemovalTests.first(5, of: stream)

        #expect(
            Self.causes(removals) == ["a replaced", "a removed", "b removed", "c cleared", "d cleared"]
                || Self.causes(removals) == ["a replaced", "a removed", "b removed", "d cleared", "c cleared"]
        )
        #expect(removals.first?.value == size, "a removal carries the size of the file that left")
    }

    @Test func expiredValuesAreToldWhenReadAndWhenSwept() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        let stream = storage.removals()
        try await storage.set(Data([1]), forKey: "read", timeToLive: .seconds(10))
        try await storage.set(Data([2]), forKey: "swept", timeToLive: .seconds(10))
        clock.advance(by: .seconds(11))

        #expect(try await storage.value(forKey: "read") == nil)
        #expect(try await storage.removeExpired() == 1)
        let removals = await RemovalTests.first(2, of: stream)

        #expect(Self.causes(removals) == ["read expired", "swept expired"])
    }

    @Test func valuesEvictedForTheCountLimitAreTold() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(maximumCount: 3))
        let stream = storage.removals()

        for index in 0..<5 { try await storage.set(Data([UInt8(index)]), forKey: "k\(index)") }
        let removals = await RemovalTests.first(2, of: stream)

        #expect(Self.causes(removals) == ["k0 evictedForCount", "k1 evictedForCount"])
    }

    @Test func valuesEvictedForTheByteLimitAreTold() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(maximumByteCount: 1_000))
        let stream = storage.removals()

        try await storage.set(Data(repeating: 1, count: 400), forKey: "first")
        try await storage.set(Data(repeating: 2, count: 400), forKey: "second")
        try await storage.set(Data(repeating: 3, count: 400), forKey: "third")
        let removals = await RemovalTests.first(1, of: stream)

        #expect(Self.causes(removals) == ["first evictedForSize"])
        #expect(storage.totalSize <= 1_000)
    }

    @Test func nothingIsCollectedWhileNobodyListens() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)

        #expect(storage.makeRemoved().removals == nil)
        let stream = storage.removals()
        #expect(storage.makeRemoved().removals != nil)
        try await storage.set(Data([1]), forKey: "a")
        try await storage.removeValue(forKey: "a")
        #expect(Self.causes(await RemovalTests.first(1, of: stream)) == ["a removed"])
    }
}
