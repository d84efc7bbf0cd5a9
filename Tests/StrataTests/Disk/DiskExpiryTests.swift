import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `Options.expiry` on DiskStorage: lifetimes worked out from the value and kept in the file's
/// header, and an idle time kept in the file's modification time, which survive reopening.
@Suite(.onTestThreads) struct DiskExpiryTests {
    /// A lifetime of as many seconds as the value's first byte; an empty value never expires, and
    /// a first byte of 0 has no time left.
    static let byFirstByte = Expiry<String, Data> { _, value in
        value.first.map { .remaining(.seconds(Int($0))) } ?? .unlimited
    }

    static func options(_ expiry: Expiry<String, Data>, clock: ManualClock) -> DiskStorage.Options {
        var options = DiskStorage.Options()
        options.expiry = expiry
        options.clock = clock
        return options
    }

    @Test func eachValueLivesAsLongAsItsRuleSaysAndKeepsItAfterReopening() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = Self.options(Self.byFirstByte, clock: clock)
        options.savesIndexSnapshots = false
        let storage = try DiskStorage(url: folder.url, options: options)
        try await storage.set(Data([5]), forKey: "short")
        try await storage.set(Data([50]), forKey: "long")
        try await storage.set(Data(), forKey: "forever")
        #expect(storage.lifetime(forKey: "short") == .remaining(.seconds(5)))

        clock.advance(by: .seconds(10))
        let reopened = try DiskStorage(url: folder.url, options: options)

        #expect(try await reopened.value(forKey: "short") == nil)
        #expect(try await reopened.value(forKey: "long") == Data([50]))
        #expect(reopened.lifetime(forKey: "long") == .remaining(.seconds(40)))
        #expect(reopened.lifetime(forKey: "forever") == .unlimited)
    }

    @Test func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOlderValue() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        let storage = try DiskStorage(url: folder.url, options: Self.options(Self.byFirstByte, clock: clock))
        try await storage.set(Data([60, 1]), forKey: "page")

        try await storage.set(Data([0, 2]), forKey: "page")
        #expect(try await storage.value(forKey: "page") == nil)

        try await storage.set(Data([60, 3]), forKey: "page")
        try await storage.update(forKey: "page") { (value: inout Data?) in value = Data([0, 4]) }
        #expect(try await storage.value(forKey: "page") == nil)
        #expect(storage.count == 0)
        #expect(storage.entries().isEmpty)
    }

    @Test func updatesAndBulkWritesFollowTheRules() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        let rules = Expiry<String, Data>(
            afterCreate: { _, value in .remaining(.seconds(Int(value.first ?? 1))) },
            afterUpdate: { _, _, current in current }
        )
        let storage = try DiskStorage(url: folder.url, options: Self.options(rules, clock: clock))
        try await storage.update(forKey: "a") { (value: inout Data?) in value = Data([30]) }
        try await storage.setValues([("b", Data([20])), ("c", Data([10]))])
        clock.advance(by: .seconds(5))
        try await storage.update(forKey: "a") { (value: inout Data?) in value = Data([90]) }
        try await storage.set(Data([90]), forKey: "b")

        #expect(storage.lifetime(forKey: "a") == .remaining(.seconds(25)))
        #expect(storage.lifetime(forKey: "b") == .remaining(.seconds(15)))
        #expect(storage.lifetime(forKey: "c") == .remaining(.seconds(5)))
        #expect(try await storage.value(forKey: "a") == Data([90]))
    }

    @Test func anIdleTimeIsRenewedByReadsAndKeptInTheFileForTheNextOpen() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = Self.options(.afterAccess(.seconds(16)), clock: clock)
        options.savesIndexSnapshots = false
        let storage = try DiskStorage(url: folder.url, options: options)
        try await storage.set(Data([1]), forKey: "read")
        try await storage.set(Data([2]), forKey: "peeked")

        for _ in 0..<5 {
            clock.advance(by: .seconds(10))
            #expect(try await storage.value(forKey: "read") == Data([1]))
            _ = try storage.peekValue(forKey: "peeked")
        }
        #expect(try await storage.value(forKey: "peeked") == nil)
        #expect(storage.lifetime(forKey: "read") == .remaining(.seconds(16)))

        clock.advance(by: .seconds(10))
        let reopened = try DiskStorage(url: folder.url, options: options)
        #expect(reopened.lifetime(forKey: "read") == .remaining(.seconds(6)))
        #expect(try await reopened.value(forKey: "read") == Data([1]))
        clock.advance(by: .seconds(17))
        #expect(try await reopened.value(forKey: "read") == nil)
    }

    @Test func aWriteOnlyDiskCacheWithAnIdleTimeStaysBounded() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        let storage = try DiskStorage(url: folder.url, options: Self.options(.afterAccess(.seconds(1)), clock: clock))
        var largest = 0
        // 50 new keys per 100 ms for 4 simulated seconds: about 500 are alive at a time.
        for step in 0..<40 {
            try await storage.setValues((0..<50).map { ("k\(step)-\($0)", Data([UInt8(step)])) })
            clock.advance(by: .milliseconds(100))
            largest = max(largest, storage.count)
        }

        #expect(largest <= 1_100, "held \(largest) files")
        #expect(storage.statistics.expirations >= 900)
    }

    /// A rule only a disk cannot keep; the words of the others are StorageLimitsTests'.
    @Test func aRuleThatWouldRewriteAFileOnEveryReadStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var options = DiskStorage.Options()
            options.expiry = Expiry(afterCreate: { _, _ in .unlimited }, afterRead: { _, _, current in current })
            _ = try DiskStorage(url: FileManager.default.temporaryDirectory, options: options)
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "DiskStorage: an Expiry with an afterRead rule would rewrite a file on every read"
        )
    }
}
