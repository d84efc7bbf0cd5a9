import Foundation
import Strata
import Testing

@Suite struct ImmediateValueTests {
    @Test func aChainOverMemoryAnswersWithoutSuspending() throws {
        let memory = MemoryStorage<String, Data>()
        memory.set(Data("12345".utf8), forKey: "a")
        let chain = memory.mapKeys { (key: String) in key.lowercased() }.mapValues { (data: Data) in data.count }

        let found = try chain.immediateValue(forKey: "A")
        let absent = try chain.immediateValue(forKey: "B")

        guard case .found(let count) = found else {
            Issue.record("expected a found value, got \(found)")
            return
        }
        #expect(count == 5)
        guard case .absent = absent else {
            Issue.record("expected absent, got \(absent)")
            return
        }
    }

    @Test func aChainOverAnAsyncOnlyStorageSaysUnavailableAndStillReads() async throws {
        let slow = GatedStorage<String, Int>()
        slow.base.set(7, forKey: "a")
        let chain = slow.mapValues { $0 * 2 }

        let immediate = try chain.immediateValue(forKey: "a")
        let value = try await chain.value(forKey: "a")

        guard case .unavailable = immediate else {
            Issue.record("expected unavailable, got \(immediate)")
            return
        }
        #expect(value == 14)
    }

    @Test func aValueThatDoesNotDecodeThrowsFromTheImmediatePathToo() {
        let memory = MemoryStorage<String, Data>()
        memory.set(Data("not json".utf8), forKey: "a")
        let cities = memory.json(City.self)

        let error = #expect(throws: StorageError.self) { try cities.immediateValue(forKey: "a") }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "a")
    }

    @Test func defaultingAnswersItsDefaultForAbsence() throws {
        let counts = MemoryStorage<String, Int>().defaulting(to: 0)

        let lookup = try counts.immediateValue(forKey: "missing")

        guard case .found(let value) = lookup else {
            Issue.record("expected the default, got \(lookup)")
            return
        }
        #expect(value == 0)
    }

    @Test func aCombinedReadCountsOneFrontMissAndOneFrontHit() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(1, forKey: "a")
        let combined = front.combined(with: back).mapValues { $0 + 0 }

        let first = try await combined.value(forKey: "a")
        let second = try await combined.value(forKey: "a")

        #expect(first == 1)
        #expect(second == 1)
        #expect(front.statistics.misses == 1)
        #expect(front.statistics.hits == 1)
        #expect(back.statistics.hits == 1)
    }
}
