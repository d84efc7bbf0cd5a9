import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// `Expiry` on MemoryStorage: idle times that reads renew, lifetimes worked out from the value,
/// rules for replaced and read values, and lifetimes that have already run out.
@Suite(.onTestThreads) struct MemoryExpiryTests {
    struct Response: Sendable, Equatable {
        var body: String
        var maxAge: Duration?
    }

    /// A lifetime read from the response: its `maxAge`, or unlimited.
    static let byMaxAge = Expiry<String, Response> { _, response in
        response.maxAge.map(Lifetime.remaining) ?? .unlimited
    }

    // MARK: After access

    @Test func anIdleTimeIsRenewedByReadsAndWritesButNotByPeeks() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(expiry: .afterAccess(.seconds(10)), clock: clock)
        cache.set(1, forKey: "read")
        cache.set(2, forKey: "peeked")
        cache.set(3, forKey: "rewritten")

        for _ in 0..<5 {
            clock.advance(by: .seconds(8))
            #expect(cache.value(forKey: "read") == 1)
            _ = cache.peekValue(forKey: "peeked")
            _ = cache.containsValue(forKey: "peeked")
            _ = cache.lifetime(forKey: "peeked")
            cache.set(3, forKey: "rewritten")
        }

        #expect(cache.value(forKey: "read") == 1)
        #expect(cache.value(forKey: "rewritten") == 3)
        #expect(cache.value(forKey: "peeked") == nil)
        #expect(cache.lifetime(forKey: "read") == .remaining(.seconds(10)))
    }

    @Test func bulkReadsRenewAnIdleTimeAsSingleReadsDo() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(expiry: .afterAccess(.seconds(10)), clock: clock)
        cache.setValues([("a", 1), ("b", 2), ("c", 3)])

        clock.advance(by: .seconds(6))
        #expect(cache.values(forKeys: ["a", "b"]) == [1, 2])
        clock.advance(by: .seconds(6))

        #expect(cache.values(forKeys: ["a", "b", "c"]) == [1, 2, nil])
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(10)))
    }

    @Test func anUpdateRenewsAnIdleTime() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(expiry: .afterAccess(.seconds(10)), clock: clock)
        try cache.update(forKey: "a") { $0 = 1 }
        clock.advance(by: .seconds(7))
        try cache.update(forKey: "a") { $0 = ($0 ?? 0) + 1 }
        clock.advance(by: .seconds(7))

        #expect(cache.peekValue(forKey: "a") == 2)
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(3)))
    }

    @Test func aWriteOnlyCacheWithAnIdleTimeStaysBoundedWhileReadEntriesLive() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<Int, Int>(expiry: .afterAccess(.seconds(1)), clock: clock)
        cache.set(-1, forKey: -1)
        var largest = 0
        // Ten simulated minutes, 100 writes of new keys per 100 ms; one key read all along.
        for step in 0..<6_000 {
            for offset in 0..<100 { cache.set(offset, forKey: step * 100 + offset) }
            #expect(cache.value(forKey: -1) == -1)
            clock.advance(by: .milliseconds(100))
            largest = max(largest, cache.count)
        }

        // About 1,000 keys are alive at a time; the sweep keeps the rest within as many again.
        #expect(largest <= 2_200, "held \(largest) entries")
        #expect(cache.value(forKey: -1) == -1)
        #expect(cache.statistics.expirations >= 590_000)
    }

    @Test func anIdleEntryThatExpiresIsToldAsExpired() async throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(expiry: .afterAccess(.seconds(1)), clock: clock)
        let removals = cache.removals()
        cache.set(1, forKey: "idle")
        clock.advance(by: .seconds(2))
        #expect(cache.removeExpired() == 1)

        let first = await RemovalTests.first(1, of: removals)
        #expect(RemovalTests.summary(first) == ["idle=1 expired"])
    }

    // MARK: Worked out from the value

    @Test func eachValueLivesAsLongAsItsOwnRuleSays() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Response>(expiry: Self.byMaxAge, clock: clock)
        cache.set(Response(body: "short", maxAge: .seconds(5)), forKey: "short")
        cache.set(Response(body: "long", maxAge: .seconds(50)), forKey: "long")
        cache.set(Response(body: "forever", maxAge: nil), forKey: "forever")

        #expect(cache.lifetime(forKey: "short") == .remaining(.seconds(5)))
        #expect(cache.lifetime(forKey: "forever") == .unlimited)
        clock.advance(by: .seconds(10))

        #expect(cache.value(forKey: "short") == nil)
        #expect(cache.value(forKey: "long")?.body == "long")
        clock.advance(by: .seconds(1_000_000))
        #expect(cache.value(forKey: "long") == nil)
        #expect(cache.value(forKey: "forever")?.body == "forever")
    }

    @Test func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOlderValue() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Response>(expiry: Self.byMaxAge, clock: clock)
        cache.set(Response(body: "fresh", maxAge: .seconds(60)), forKey: "page")

        cache.set(Response(body: "stale", maxAge: .zero), forKey: "page")
        #expect(cache.value(forKey: "page") == nil)
        cache.set(Response(body: "negative", maxAge: .seconds(-30)), forKey: "page")
        #expect(cache.value(forKey: "page") == nil)
        #expect(cache.count == 0)

        cache.set(Response(body: "fresh", maxAge: .seconds(60)), forKey: "page")
        try cache.update(forKey: "page") { $0?.maxAge = .seconds(-1) }
        #expect(cache.value(forKey: "page") == nil)
        #expect(cache.count == 0)
    }

    @Test func aLifetimeTooLongToRepresentAsADateStillExpiresNeverInPractice() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Response>(expiry: Self.byMaxAge, clock: clock)
        cache.set(Response(body: "a", maxAge: .seconds(Int64.max)), forKey: "a")
        clock.advance(by: .seconds(100 * 365 * 24 * 3_600))

        #expect(cache.value(forKey: "a")?.body == "a")
        guard case .remaining(let left) = cache.lifetime(forKey: "a") else {
            Issue.record("expected a remaining lifetime")
            return
        }
        #expect(left > .seconds(1_000_000_000))
    }

    @Test func aTimeToLiveGivenToOneCallIsUsedAndTheRulesAreNotAsked() throws {
        let clock = ManualClock()
        let asked = LockedState(0)
        let cache = MemoryStorage<String, Int>(
            expiry: Expiry { _, _ in
                asked.withLock { $0 += 1 }
                return .remaining(.seconds(100))
            },
            clock: clock
        )
        cache.set(1, forKey: "a", timeToLive: .seconds(5))
        try cache.update(forKey: "b", timeToLive: .seconds(5)) { $0 = 2 }
        cache.setValues([("c", 3)], timeToLive: .seconds(5))

        #expect(asked.withLock { $0 } == 0)
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(5)))
        #expect(cache.lifetime(forKey: "b") == .remaining(.seconds(5)))
        #expect(cache.lifetime(forKey: "c") == .remaining(.seconds(5)))
    }

    // MARK: Rules for replaced and read values

    @Test func theUpdateRuleSeesTheOldLifetimeAndCanKeepIt() throws {
        let clock = ManualClock()
        let seen = LockedState<[Lifetime]>([])
        let cache = MemoryStorage<String, Int>(
            expiry: Expiry(
                afterCreate: { _, _ in .remaining(.seconds(60)) },
                afterUpdate: { _, _, current in
                    seen.withLock { $0.append(current) }
                    return current
                }
            ),
            clock: clock
        )
        cache.set(1, forKey: "a")
        clock.advance(by: .seconds(20))
        cache.set(2, forKey: "a")
        clock.advance(by: .seconds(20))
        try cache.update(forKey: "a") { $0 = ($0 ?? 0) + 1 }
        clock.advance(by: .seconds(19))

        #expect(seen.withLock { $0 } == [.remaining(.seconds(40)), .remaining(.seconds(20))])
        #expect(cache.value(forKey: "a") == 3)
        clock.advance(by: .seconds(1))
        #expect(cache.value(forKey: "a") == nil)
    }

    @Test func withoutAnUpdateRuleAReplacedValueStartsALifetimeOfItsOwn() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Response>(expiry: Self.byMaxAge, clock: clock)
        cache.set(Response(body: "v1", maxAge: .seconds(10)), forKey: "page")
        clock.advance(by: .seconds(8))
        cache.set(Response(body: "v2", maxAge: .seconds(30)), forKey: "page")
        clock.advance(by: .seconds(8))

        #expect(cache.value(forKey: "page")?.body == "v2")
        #expect(cache.lifetime(forKey: "page") == .remaining(.seconds(22)))
    }

    @Test func theReadRuleRunsOnReadsThatCountAsAUse() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(
            expiry: Expiry(
                afterCreate: { _, _ in .remaining(.seconds(10)) },
                afterRead: { _, value, current in
                    // Each read adds a value's worth of seconds, up to a minute.
                    guard case .remaining(let left) = current else { return current }
                    return .remaining(min(left + .seconds(value), .seconds(60)))
                }
            ),
            clock: clock
        )
        cache.set(5, forKey: "a")
        _ = cache.peekValue(forKey: "a")
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(10)))

        #expect(cache.value(forKey: "a") == 5)
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(15)))
        #expect(cache.values(forKeys: ["a", "missing"]) == [5, nil])
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(20)))
        for _ in 0..<20 { _ = cache.value(forKey: "a") }
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(60)))
    }

    @Test func aReadRuleThatAnswersNoTimeLeftReturnsTheValueOnceThenExpiresIt() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(
            expiry: Expiry(
                afterCreate: { _, _ in .unlimited },
                afterRead: { _, _, _ in .remaining(.seconds(-5)) }
            ),
            clock: clock
        )
        cache.set(1, forKey: "once")

        #expect(cache.value(forKey: "once") == 1)
        #expect(cache.value(forKey: "once") == nil)
        #expect(cache.count == 0)
        #expect(cache.statistics.expirations == 1)
    }

    @Test func aReadRuleThatShortensLifetimesStillLetsTheSweepRemoveWhatNobodyReadsAgain() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<Int, Int>(
            expiry: Expiry(
                afterCreate: { _, _ in .unlimited },
                afterRead: { _, _, _ in .remaining(.seconds(1)) }
            ),
            clock: clock
        )
        for key in 0..<1_000 {
            cache.set(key, forKey: key)
            _ = cache.value(forKey: key)
        }
        clock.advance(by: .seconds(2))
        // New entries that never expire pay for sweeping the old ones.
        for key in 1_000..<3_000 { cache.set(key, forKey: key) }

        #expect(cache.count == 2_000)
        #expect(cache.statistics.expirations == 1_000)
    }

    @Test func rulesRunOutsideTheStoragesLocksSoTheyMayUseTheStorage() throws {
        final class Box: Sendable {
            let storage = LockedState<MemoryStorage<String, Int>?>(nil)
        }
        let box = Box()
        let rules = Expiry<String, Int>(
            afterCreate: { _, _ in
                // Reads the storage from inside a rule: a lock held here would deadlock.
                let count = box.storage.withLock { $0 }?.count ?? 0
                return .remaining(.seconds(10 + count))
            },
            afterUpdate: { key, _, current in
                _ = box.storage.withLock { $0 }?.peekValue(forKey: key)
                return current
            },
            afterRead: { key, _, current in
                _ = box.storage.withLock { $0 }?.containsValue(forKey: key)
                return current
            }
        )
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(expiry: rules, clock: clock)
        box.storage.withLock { $0 = cache }

        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")
        cache.set(3, forKey: "b")
        try cache.update(forKey: "c") { $0 = 4 }
        cache.setValues([("d", 5)])

        #expect(cache.values(forKeys: ["a", "b", "c", "d"]) == [1, 3, 4, 5])
        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(10)))
        #expect(cache.lifetime(forKey: "b") == .remaining(.seconds(11)))
        #expect(cache.lifetime(forKey: "d") == .remaining(.seconds(13)))
    }

    // MARK: Bulk writes

    @Test func bulkWritesWorkOutEachValuesLifetime() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Response>(expiry: Self.byMaxAge, clock: clock)
        cache.set(Response(body: "old", maxAge: nil), forKey: "gone")
        cache.setValues([
            ("a", Response(body: "a", maxAge: .seconds(5))),
            ("b", Response(body: "b", maxAge: nil)),
            ("gone", Response(body: "expired", maxAge: .zero)),
            ("twice", Response(body: "kept", maxAge: .seconds(5))),
            ("twice", Response(body: "expired", maxAge: .seconds(-1))),
        ])

        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(5)))
        #expect(cache.lifetime(forKey: "b") == .unlimited)
        #expect(cache.value(forKey: "gone") == nil)
        #expect(cache.value(forKey: "twice") == nil)
        #expect(cache.count == 2)
    }

    @Test func bulkWritesApplyTheUpdateRuleToEachReplacedValue() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(
            expiry: Expiry(
                afterCreate: { _, _ in .remaining(.seconds(60)) },
                afterUpdate: { _, _, current in current }
            ),
            clock: clock
        )
        cache.set(0, forKey: "a")
        clock.advance(by: .seconds(30))
        cache.setValues([("a", 1), ("b", 2)])

        #expect(cache.lifetime(forKey: "a") == .remaining(.seconds(30)))
        #expect(cache.lifetime(forKey: "b") == .remaining(.seconds(60)))
    }

    // MARK: Configuration

    /// The words a storage stops with (the stop itself: StorageLimitsTests).
    @Test func aTimeToLiveAndAnExpiryTogetherAreNamed() {
        let problem = ConfigurationRule.limitsProblem(
            maximumCount: nil,
            maximumCost: nil,
            timeToLive: .seconds(1),
            expiry: Expiry<String, Int>.afterAccess(.seconds(1))
        )

        #expect(problem == "give timeToLive (1.0 seconds) or expiry, not both")
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func anIdleTimeOrTimeToLiveOfZeroOrLessIsNamed(time: Duration) {
        func problem(_ expiry: Expiry<String, Int>) -> String? {
            ConfigurationRule.limitsProblem(maximumCount: nil, maximumCost: nil, timeToLive: nil, expiry: expiry)
        }

        #expect(problem(.afterAccess(time)) == "the idle time of Expiry.afterAccess must be positive, got \(time)")
        let timeToLiveProblem = ConfigurationRule.limitsProblem(
            maximumCount: nil,
            maximumCost: nil,
            timeToLive: time,
            expiry: Expiry<String, Int>?.none
        )
        #expect(timeToLiveProblem == "timeToLive must be positive, got \(time)")
    }

    /// What `Expiry.afterWrite` did before it went: one lifetime, restarted by every write,
    /// an update's included (where `timeToLive:` keeps an updated value's lifetime).
    @Test func anExpiryOfOneLifetimeRestartsItOnEveryWriteAndATimeToLiveDoesNotOnUpdates() throws {
        let clock = ManualClock()
        let restarting = MemoryStorage<String, Int>(expiry: Expiry { _, _ in .remaining(.seconds(10)) }, clock: clock)
        let keeping = MemoryStorage<String, Int>(timeToLive: .seconds(10), clock: clock)
        for cache in [restarting, keeping] { cache.set(1, forKey: "a") }
        clock.advance(by: .seconds(8))
        for cache in [restarting, keeping] { try cache.update(forKey: "a") { $0 = 2 } }
        clock.advance(by: .seconds(8))

        #expect(restarting.value(forKey: "a") == 2)
        #expect(keeping.value(forKey: "a") == nil)
        clock.advance(by: .seconds(2))
        #expect(restarting.value(forKey: "a") == nil)
    }
}
