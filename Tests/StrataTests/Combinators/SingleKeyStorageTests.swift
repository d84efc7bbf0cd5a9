import Strata
import Testing

@Suite struct SingleKeyStorageTests {
    @Test func valueLivesInTheBaseUnderTheFixedKey() async throws {
        let base = MemoryStorage<String, Int>()
        let single = base.singleKey("the-one")

        try await single.set(1)

        #expect(base.value(forKey: "the-one") == 1)
        #expect(try await single.value() == 1)
        #expect(try await single.value(forKey: ()) == 1)
    }

    @Test func removeValueRemovesTheOneValue() async throws {
        let base = MemoryStorage<String, Int>()
        base.set(1, forKey: "the-one")
        base.set(2, forKey: "another")
        let single = base.singleKey("the-one")

        try await single.removeValue()

        #expect(try await single.value() == nil)
        #expect(base.value(forKey: "another") == 2)
    }

    @Test func updateChangesTheOneValue() async throws {
        let base = MemoryStorage<String, Int>()
        let single = base.singleKey("counter")

        try await single.update { $0 = ($0 ?? 0) + 1 }
        try await single.update { $0 = ($0 ?? 0) + 1 }

        #expect(base.value(forKey: "counter") == 2)
    }

    @Test func protocolMethodsUseTheFixedKey() async throws {
        let base = MemoryStorage<String, Int>()
        let single = base.singleKey("the-one")

        try await single.set(5, forKey: ())
        try await single.removeValue(forKey: ())

        #expect(base.count == 0)
    }
}
