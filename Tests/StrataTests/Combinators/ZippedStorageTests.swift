import Strata
import Testing

@Suite struct ZippedStorageTests {
    @Test func setWritesEachElementToItsStorage() async throws {
        let strings = MemoryStorage<String, String>()
        let numbers = MemoryStorage<String, Int>()
        let zipped = zip(strings, numbers)

        try await zipped.set(("shallows", 3), forKey: "key")

        #expect(strings.value(forKey: "key") == "shallows")
        #expect(numbers.value(forKey: "key") == 3)
    }

    @Test func readReturnsThePairWhenBothHaveAValue() async throws {
        let strings = MemoryStorage<String, String>()
        let numbers = MemoryStorage<String, Int>()
        strings.set("shallows", forKey: "key")
        numbers.set(3, forKey: "key")

        let pair = try await zip(strings, numbers).value(forKey: "key")

        #expect(pair?.0 == "shallows")
        #expect(pair?.1 == 3)
    }

    @Test func readIsNilWhenEitherHasNoValue() async throws {
        let strings = MemoryStorage<String, String>()
        let numbers = MemoryStorage<String, Int>()
        strings.set("only string", forKey: "first")
        numbers.set(1, forKey: "second")
        let zipped = zip(strings, numbers)

        let first = try await zipped.value(forKey: "first")
        let second = try await zipped.value(forKey: "second")

        #expect(first == nil)
        #expect(second == nil)
    }

    @Test func removeValueRemovesFromBoth() async throws {
        let strings = MemoryStorage<String, String>()
        let numbers = MemoryStorage<String, Int>()
        let zipped = zip(strings, numbers)
        try await zipped.set(("shallows", 3), forKey: "key")

        try await zipped.removeValue(forKey: "key")

        #expect(strings.count == 0)
        #expect(numbers.count == 0)
    }

    @Test func failingReadOfEitherFailsTheRead() async throws {
        let strings = MemoryStorage<String, String>()
        strings.set("shallows", forKey: "key")
        let zipped = zip(strings, FailingStorage<String, Int>(failing: [.read]))

        let error = await #expect(throws: StorageError.self) {
            try await zipped.value(forKey: "key")
        }

        #expect(error?.code == .io)
    }
}
