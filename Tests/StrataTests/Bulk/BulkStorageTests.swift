import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// `values(forKeys:)` and `setValues(_:)`: the same answers as one key at a time, in one step
/// where the storage has one, and every failure as clear as a single call's.
@Suite(.onTestThreads) struct BulkStorageTests {
    /// A storage over a ``MemoryStorage`` that counts the bulk calls that reach it.
    final class CountingStorage: Storage {
        let base = MemoryStorage<String, Int>()
        let calls = LockedState((reads: 0, keysRead: 0, writes: 0, singleReads: 0))

        func value(forKey key: String) async throws(StorageError) -> Int? {
            calls.withLock { $0.singleReads += 1 }
            return base.value(forKey: key)
        }

        func values(forKeys keys: [String]) async throws(StorageError) -> [Int?] {
            calls.withLock {
                $0.reads += 1
                $0.keysRead += keys.count
            }
            return try await base.values(forKeys: keys)
        }

        func set(_ value: Int, forKey key: String) async throws(StorageError) {
            base.set(value, forKey: key)
        }

        func setValues(_ entries: [(key: String, value: Int)]) async throws(StorageError) {
            calls.withLock { $0.writes += 1 }
            try await base.setValues(entries)
        }

        func removeValue(forKey key: String) async throws(StorageError) {
            base.removeValue(forKey: key)
        }
    }

    // MARK: Memory

    @Test func memoryReadsManyKeysInTheirOrderAndCountsEachHitAndMiss() throws {
        let cache = MemoryStorage<String, Int>()
        cache.setValues((0..<1_000).map { (key: "k\($0)", value: $0) })
        var generator = SeededRandomNumberGenerator(seed: 3)
        let asked = ((0..<1_500).map { "k\($0)" } + ["k7", "k7", "k1499"]).shuffled(using: &generator)

        let read = cache.values(forKeys: asked)

        #expect(read == asked.map { key in Int(key.dropFirst()).flatMap { $0 < 1_000 ? $0 : nil } })
        #expect(cache.statistics.hits == 1_002)
        #expect(cache.statistics.misses == 501)
        #expect(cache.values(forKeys: []).isEmpty)
    }

    @Test func memoryReadsAnExpiredValueAsMissingAndRemovesIt() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(clock: clock)
        cache.setValues([("short", 1), ("other", 2)], timeToLive: .seconds(10))
        cache.set(3, forKey: "forever")
        clock.advance(by: .seconds(10))

        let read = cache.values(forKeys: ["short", "forever", "other"])

        #expect(read == [nil, 3, nil])
        #expect(cache.count == 1)
    }

    @Test func memorySetValuesKeepsTheLimitsAndReportsEachRemoval() async throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 100)
        let removals = cache.removals(bufferingNewest: 10_000)
        cache.set(-1, forKey: "k0")

        try await cache.setValues((0..<1_000).map { (key: "k\($0)", value: $0) })
        cache.removeAll()

        #expect(cache.count == 0)
        var causes: [RemovalCause: Int] = [:]
        for await removal in removals {
            causes[removal.cause, default: 0] += 1
            if removal.cause == .cleared { break }
        }
        #expect(causes[.replaced] == 1)
        #expect(causes[.evictedForCount] == 900)
    }

    @Test func memorySetValuesWithALifetimeThatHasRunOutRemovesTheKeys() throws {
        let cache = MemoryStorage<String, Int>()
        cache.setValues([("a", 1), ("b", 2), ("c", 3)])

        cache.setValues([("a", 10), ("b", 20)], timeToLive: .zero)

        #expect(cache.values(forKeys: ["a", "b", "c"]) == [nil, nil, 3])
    }

    @Test func memorySetValuesGivesEachValueTheLifetime() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)

        cache.setValues([("a", 1), ("b", 2)], timeToLive: .seconds(5))
        cache.setValues([("c", 3)])

        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(5)))
        #expect(cache.lifetime(forKey: "c") == .remaining(.seconds(60)))
    }

    @Test func presentValuesGivesTheFoundValuesByKey() async throws {
        let cache = MemoryStorage<String, Int>()
        try await cache.setValues(["a": 1, "b": 2])

        let found = try await cache.presentValues(forKeys: ["a", "missing", "b"])

        #expect(found == ["a": 1, "b": 2])
    }

    // MARK: Disk

    @Test(arguments: [DiskStorage.Mode.store, .cache])
    func diskReadsAndWritesManyFilesAndKeepsThem(mode: DiskStorage.Mode) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        let entries = (0..<300).map { (key: "key \($0)", value: Data("value \($0)".utf8)) }

        try await storage.setValues(entries + [(key: "key 0", value: Data("later".utf8))])
        let read = try await storage.values(forKeys: ["missing"] + entries.map(\.key) + ["key 299"])
        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))

        #expect(read.count == 302)
        #expect(read.first == .some(nil))
        #expect(read[1] == Data("later".utf8))
        #expect(Array(read[2...300]) == entries[1...].map { Optional($0.value) })
        #expect(read.last == Data("value 299".utf8))
        #expect(reopened.count == 300)
        #expect(try await reopened.value(forKey: "key 0") == Data("later".utf8))
    }

    @Test func aDamagedFileFailsAStoreBulkReadAsCorruptedNamingItsKey() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: .store))
        try await storage.setValues((0..<50).map { (key: "k\($0)", value: Data(repeating: 1, count: 100)) })
        let path = folder.path + "/" + relativePath(forKey: "k17")
        try Data("not a record".utf8).write(to: URL(fileURLWithPath: path))

        let error = await #expect(throws: StorageError.self) {
            try await storage.values(forKeys: (0..<50).map { "k\($0)" })
        }

        #expect(error?.code == .corrupted)
        #expect(error?.key == "k17")
        #expect(try await storage.value(forKey: "k18") == Data(repeating: 1, count: 100))
    }

    @Test func aDamagedFileIsAMissInACacheBulkReadAndTheOthersAreRead() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: .cache))
        try await storage.setValues((0..<50).map { (key: "k\($0)", value: Data(repeating: 1, count: 100)) })
        let path = folder.path + "/" + relativePath(forKey: "k17")
        try Data("not a record".utf8).write(to: URL(fileURLWithPath: path))

        let read = try await storage.values(forKeys: (0..<50).map { "k\($0)" })

        #expect(read[17] == nil)
        #expect(read.count(where: { $0 == Data(repeating: 1, count: 100) }) == 49)
    }

    @Test func aKeyTheDiskRefusesFailsABulkWriteAsInvalidKey() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let huge = String(repeating: "k", count: 1_048_577)
        let entries = (0..<40).map { (key: "k\($0)", value: Data([1])) } + [(key: huge, value: Data([2]))]

        let error = await #expect(throws: StorageError.self) { try await storage.setValues(entries) }

        #expect(error?.code == .invalidKey)
        #expect(try await storage.value(forKey: "k0") == Data([1]))
        #expect(storage.count == 40, "the entries before the refused key are written, and only they")
    }

    // MARK: Combinators

    @Test func combinedReadsTheFrontOnceAndTheBackOnceForWhatTheFrontLacks() async throws {
        let front = CountingStorage()
        let back = CountingStorage()
        front.base.set(1, forKey: "a")
        try await back.base.setValues([("a", 100), ("b", 2), ("c", 3)])
        let layered = front.combined(with: back)

        let read = try await layered.values(forKeys: ["a", "b", "missing", "c"])

        #expect(read == [1, 2, nil, 3])
        #expect(front.calls.withLock { $0.reads } == 1)
        #expect(back.calls.withLock { ($0.reads, $0.keysRead) } == (1, 3))
        #expect(try await front.base.values(forKeys: ["b", "c", "missing"]) == [2, 3, nil])
        #expect(front.calls.withLock { $0.singleReads } == 0)
    }

    @Test func combinedBulkReadIsAnsweredByTheBackWhenTheFrontFails() async throws {
        let front = FailingStorage<String, Int>(failing: [.read])
        let back = MemoryStorage<String, Int>()
        try await back.setValues([("a", 1), ("b", 2)])
        let reported = LockedState<[StorageError.Code]>([])
        let layered = front.combined(with: back, reporting: { error in reported.withLock { $0.append(error.code) } })

        let read = try await layered.values(forKeys: ["a", "b", "c"])

        #expect(read == [1, 2, nil])
        #expect(reported.withLock { $0 } == [.io])
    }

    @Test func combinedBulkReadThrowsTheBacksError() async throws {
        let back = FailingStorage<String, Int>(failing: [.read], name: "Back")
        let layered = MemoryStorage<String, Int>().combined(with: back)

        let error = await #expect(throws: StorageError.self) { try await layered.values(forKeys: ["a"]) }

        #expect(error?.code == .io)
        #expect(error?.storage == "Back")
    }

    @Test func combinedBulkWriteThatFailsInTheFrontLeavesNoStaleValueThere() async throws {
        let front = FailingStorage<String, Int>(failing: [.set])
        let back = MemoryStorage<String, Int>()
        try await front.base.setValues([("a", 1), ("b", 2)])
        let layered = front.combined(with: back)

        let error = await #expect(throws: StorageError.self) {
            try await layered.setValues([("a", 10), ("b", 20)])
        }

        #expect(error?.code == .io)
        #expect(try await front.base.values(forKeys: ["a", "b"]) == [nil, nil])
        #expect(try await layered.values(forKeys: ["a", "b"]) == [10, 20])
    }

    @Test func combinedBulkWriteReachesEachLayerInOneCall() async throws {
        let front = CountingStorage()
        let back = CountingStorage()
        let layered = front.combined(with: back)

        try await layered.setValues((0..<100).map { (key: "k\($0)", value: $0) })

        #expect(front.calls.withLock { $0.writes } == 1)
        #expect(back.calls.withLock { $0.writes } == 1)
        #expect(front.base.count == 100)
        #expect(back.base.count == 100)
    }

    @Test func mappedStoragesPassBulkCallsDownInOneCall() async throws {
        let base = CountingStorage()
        let mapped = base.mapKeys { (key: Int) in "k\(key)" }
            .mapValues(reading: { String($0) }, writing: { (text: String) in try Int(text).orThrow() })

        try await mapped.setValues([(1, "1"), (2, "2")])
        let read = try await mapped.values(forKeys: [2, 3, 1])
        let refused = await #expect(throws: StorageError.self) {
            try await mapped.setValues([(4, "4"), (5, "five")])
        }

        #expect(read == ["2", nil, "1"])
        #expect(base.calls.withLock { ($0.reads, $0.writes, $0.singleReads) } == (1, 1, 0))
        #expect(refused?.code == .encodingFailed)
        #expect(base.base.value(forKey: "k4") == nil, "nothing is written when one value does not convert")
    }

    @Test func aValueThatDoesNotDecodeFailsTheBulkReadAsDecodingFailed() async throws {
        let base = MemoryStorage<String, Data>()
        try await base.setValues([("good", Data("1".utf8)), ("bad", Data("{".utf8))])
        let numbers = base.json(Int.self)

        let error = await #expect(throws: StorageError.self) {
            try await numbers.values(forKeys: ["good", "bad"])
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "bad")
    }
}

extension Optional {
    fileprivate func orThrow() throws -> Wrapped {
        guard let self else { throw CocoaError(.formatting) }
        return self
    }
}
