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

    @Test func aFailingWriteOfEitherSideStillWritesTheOtherAndThrows() async throws {
        // First fails: the second is written all the same.
        let failingFirst = FailingStorage<String, String>(failing: [.set], name: "first")
        let ages = MemoryStorage<String, Int>()
        let error = await #expect(throws: StorageError.self) {
            try await zip(failingFirst, ages).set(("Ada", 36), forKey: "ada")
        }
        #expect(error?.storage == "first")
        #expect(ages.value(forKey: "ada") == 36)
        #expect(failingFirst.base.value(forKey: "ada") == nil)

        // Second fails: the first keeps its new element, and the error is the second's.
        let names = MemoryStorage<String, String>()
        let failingSecond = FailingStorage<String, Int>(failing: [.set], name: "second")
        let secondError = await #expect(throws: StorageError.self) {
            try await zip(names, failingSecond).set(("Ada", 36), forKey: "ada")
        }
        #expect(secondError?.storage == "second")
        #expect(names.value(forKey: "ada") == "Ada")
    }

    @Test func aFailingRemovalOfEitherSideStillRemovesTheOther() async throws {
        let failingFirst = FailingStorage<String, String>(failing: [.remove], name: "first")
        failingFirst.base.set("Ada", forKey: "ada")
        let ages = MemoryStorage<String, Int>()
        ages.set(36, forKey: "ada")
        let zipped = zip(failingFirst, ages)

        let error = await #expect(throws: StorageError.self) { try await zipped.removeValue(forKey: "ada") }

        #expect(error?.storage == "first")
        #expect(ages.value(forKey: "ada") == nil)
        #expect(try await zipped.value(forKey: "ada") == nil, "a read no longer finds a pair")
    }
}
