import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// `Options.expiry` on SQLiteStorage: lifetimes worked out from the value inside the write's
/// transaction, and an idle time renewed when a read records its access.
@Suite(.onTestThreads) struct SQLiteExpiryTests {
    /// A lifetime of as many seconds as the value's first byte; an empty value never expires, and
    /// a first byte of 0 has no time left.
    static let byFirstByte = Expiry<String, Data> { _, value in
        value.first.map { .remaining(.seconds(Int($0))) } ?? .unlimited
    }

    static func storage(
        _ folder: TemporaryFolder,
        _ expiry: Expiry<String, Data>,
        clock: ManualClock
    ) throws -> SQLiteStorage {
        var options = SQLiteStorage.Options(clock: clock)
        options.expiry = expiry
        return try SQLiteStorage(path: folder.path("expiry.sqlite"), options: options)
    }

    @Test func eachValueLivesAsLongAsItsRuleSays() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try Self.storage(folder, Self.byFirstByte, clock: clock)
        try await storage.set(Data([5]), forKey: "short")
        try await storage.setValues(["long": Data([50]), "forever": Data()])

        #expect(try await storage.lifetime(forKey: "short") == .remaining(.seconds(5)))
        #expect(try await storage.lifetime(forKey: "long") == .remaining(.seconds(50)))
        #expect(try await storage.lifetime(forKey: "forever") == .unlimited)
        clock.advance(by: .seconds(10))
        #expect(try await storage.value(forKey: "short") == nil)
        #expect(try await storage.value(forKey: "long") == Data([50]))
    }

    @Test func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOlderValue() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try Self.storage(folder, Self.byFirstByte, clock: clock)
        try await storage.setValues(["a": Data([60]), "b": Data([60])])

        try await storage.setValues(["a": Data([0]), "c": Data([30])])
        try await storage.update(forKey: "b") { (value: inout Data?) in value = Data([0]) }

        #expect(try await storage.value(forKey: "a") == nil)
        #expect(try await storage.value(forKey: "b") == nil)
        #expect(try await storage.value(forKey: "c") == Data([30]))
        #expect(try await storage.statistics().count == 1)
    }

    @Test func theUpdateRuleSeesTheOldLifetimeOnSetsAndUpdates() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let seen = LockedBox<[Lifetime]>([])
        let rules = Expiry<String, Data>(
            afterCreate: { _, _ in .remaining(.seconds(60)) },
            afterUpdate: { _, _, current in
                seen.mutate { $0.append(current) }
                return current
            }
        )
        let storage = try Self.storage(folder, rules, clock: clock)
        try await storage.set(Data([1]), forKey: "a")
        clock.advance(by: .seconds(20))
        try await storage.set(Data([2]), forKey: "a")
        clock.advance(by: .seconds(20))
        try await storage.update(forKey: "a") { (value: inout Data?) in value = Data([3]) }

        #expect(seen.value == [.remaining(.seconds(40)), .remaining(.seconds(20))])
        #expect(try await storage.lifetime(forKey: "a") == .remaining(.seconds(20)))
        #expect(try await storage.value(forKey: "a") == Data([3]))
    }

    @Test func anIdleTimeIsRenewedByReadsButNotByLifetimeQueries() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try Self.storage(folder, .afterAccess(.seconds(16)), clock: clock)
        try await storage.setValues(["read": Data([1]), "unread": Data([2])])

        for _ in 0..<5 {
            clock.advance(by: .seconds(10))
            #expect(try await storage.value(forKey: "read") == Data([1]))
            _ = try await storage.lifetime(forKey: "unread")
            _ = try await storage.containsValue(forKey: "unread")
        }

        #expect(try await storage.value(forKey: "unread") == nil)
        #expect(try await storage.lifetime(forKey: "read") == .remaining(.seconds(16)))
        #expect(try await storage.values(forKeys: ["read"]) == [Data([1])])
        clock.advance(by: .seconds(17))
        #expect(try await storage.value(forKey: "read") == nil)
    }

    /// A rule a database cannot keep; the words of the others are StorageLimitsTests'.
    @Test func aRuleThatWouldWriteOnEveryReadStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var options = SQLiteStorage.Options()
            options.expiry = Expiry(afterCreate: { _, _ in .unlimited }, afterRead: { _, _, current in current })
            _ = try SQLiteStorage(path: "/nonexistent/refused.sqlite", options: options)
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "SQLiteStorage: SQLiteStorage cannot renew lifetimes on reads"
        )
    }
}
