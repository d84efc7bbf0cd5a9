import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `backed(by:)` is updatable when its front is, and keeps lifetimes when both layers do: an
/// update starts from the back's value when the front has none, writes the front only, and a
/// copy taken from the back never outlives it.
@Suite struct BackedStorageUpdateTests {
    @Test func anUpdateStartsFromTheBacksValueAndWritesTheFrontOnly() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(10, forKey: "score")
        let backed = front.backed(by: back)

        let before = try await backed.update(forKey: "score") { (value: inout Int?) -> Int? in
            defer { value = (value ?? 0) + 1 }
            return value
        }
        try await backed.update(forKey: "score") { $0 = ($0 ?? 0) + 1 }

        #expect(before == 10)
        #expect(front.value(forKey: "score") == 12)
        #expect(back.value(forKey: "score") == 10)

        try await backed.update(forKey: "score") { $0 = nil }

        #expect(front.value(forKey: "score") == nil)
        #expect(try await backed.value(forKey: "score") == 10)  // the back supplies its own again
    }

    @Test func concurrentUpdatesOfAKeyTheBackSuppliesAreNotLost() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(1_000, forKey: "counter")
        let backed = front.backed(by: back)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask { try await backed.update(forKey: "counter") { $0 = ($0 ?? 0) + 1 } }
            }
            try await group.waitForAll()
        }

        #expect(front.value(forKey: "counter") == 1_200)
        #expect(back.value(forKey: "counter") == 1_000)
    }

    @Test func aCopyTakenFromTheBackKeepsTheBacksLifetime() async throws {
        let clock = ManualClock()
        let front = MemoryStorage<String, Int>(clock: clock)
        let back = MemoryStorage<String, Int>(clock: clock)
        back.set(5, forKey: "token", timeToLive: .seconds(10))
        let backed = front.backed(by: back)

        #expect(try await backed.lifetime(forKey: "token") == .remaining(.seconds(10)))
        try await backed.update(forKey: "token", lifetime: nil) { $0 = ($0 ?? 0) + 1 }

        #expect(front.value(forKey: "token") == 6)
        #expect(front.lifetime(forKey: "token") == .remaining(.seconds(10)))

        clock.advance(by: .seconds(11))

        #expect(try await backed.value(forKey: "token") == nil)
        #expect(try await backed.lifetime(forKey: "token") == nil)
    }

    @Test func aLifetimeSetThroughTheBackedStorageIsTheFronts() async throws {
        let clock = ManualClock()
        let front = MemoryStorage<String, Int>(clock: clock)
        let back = MemoryStorage<String, Int>(clock: clock)
        back.set(1, forKey: "a")
        let backed = front.backed(by: back)

        try await backed.set(2, forKey: "a", timeToLive: .seconds(1))
        try await backed.update(forKey: "b", lifetime: .remaining(.seconds(3))) { $0 = 3 }

        #expect(try await backed.lifetime(forKey: "a") == .remaining(.seconds(1)))
        #expect(try await backed.lifetime(forKey: "b") == .remaining(.seconds(3)))
        clock.advance(by: .seconds(2))
        #expect(try await backed.value(forKey: "a") == 1)  // the front's copy ended; the back's is there
        #expect(try await backed.value(forKey: "b") == 3)
        #expect(back.value(forKey: "b") == nil)
    }
}
