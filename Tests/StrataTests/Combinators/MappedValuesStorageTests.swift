import Foundation
import Strata
import Testing

@Suite struct MappedValuesStorageTests {
    private struct NotANumber: Error {}
    private struct Unencodable: Error {}

    private typealias Numbers = MappedValuesStorage<MemoryStorage<String, String>, Int>

    /// Integers kept as decimal strings; negative numbers cannot be written.
    private static func numbers(in base: MemoryStorage<String, String>) -> Numbers {
        base.mapValues(
            reading: { text in
                guard let number = Int(text) else { throw NotANumber() }
                return number
            },
            writing: { number in
                guard number >= 0 else { throw Unencodable() }
                return String(number)
            }
        )
    }

    @Test func valuesAreConvertedBothWays() async throws {
        let base = MemoryStorage<String, String>()
        let numbers = Self.numbers(in: base)

        try await numbers.set(42, forKey: "answer")

        #expect(base.value(forKey: "answer") == "42")
        #expect(try await numbers.value(forKey: "answer") == 42)
        #expect(try await numbers.value(forKey: "missing") == nil)
    }

    @Test func valueThatFailsToDecodeThrowsDecodingFailedAndStaysStored() async throws {
        let base = MemoryStorage<String, String>()
        base.set("forty-two", forKey: "answer")
        let numbers = Self.numbers(in: base)

        let error = await #expect(throws: StorageError.self) {
            try await numbers.value(forKey: "answer")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "answer")
        #expect(error?.underlying is NotANumber)
        #expect(error?.description.contains("answer") == true)
        #expect(base.value(forKey: "answer") == "forty-two")
    }

    @Test func valueThatFailsToEncodeThrowsEncodingFailedAndWritesNothing() async throws {
        let base = MemoryStorage<String, String>()
        base.set("1", forKey: "old")
        let numbers = Self.numbers(in: base)

        let error = await #expect(throws: StorageError.self) {
            try await numbers.set(-1, forKey: "old")
        }

        #expect(error?.code == .encodingFailed)
        #expect(error?.key == "old")
        #expect(error?.underlying is Unencodable)
        #expect(base.value(forKey: "old") == "1")
    }

    @Test func updateDecodesChangesAndEncodes() async throws {
        let base = MemoryStorage<String, String>()
        base.set("41", forKey: "answer")
        let numbers = Self.numbers(in: base)

        try await numbers.update(forKey: "answer") { $0? += 1 }

        #expect(base.value(forKey: "answer") == "42")
    }

    @Test func updateOfAValueThatFailsToDecodeThrowsAndKeepsIt() async throws {
        let base = MemoryStorage<String, String>()
        base.set("forty-one", forKey: "answer")
        let numbers = Self.numbers(in: base)

        let error = await #expect(throws: StorageError.self) {
            try await numbers.update(forKey: "answer") { $0 = 1 }
        }

        #expect(error?.code == .decodingFailed)
        #expect(base.value(forKey: "answer") == "forty-one")
    }

    @Test func updateToAValueThatFailsToEncodeThrowsAndKeepsTheOldOne() async throws {
        let base = MemoryStorage<String, String>()
        base.set("1", forKey: "answer")
        let numbers = Self.numbers(in: base)

        let error = await #expect(throws: StorageError.self) {
            try await numbers.update(forKey: "answer") { $0 = -1 }
        }

        #expect(error?.code == .encodingFailed)
        #expect(base.value(forKey: "answer") == "1")
    }

    @Test func readOnlyMappingConvertsOnTheWayOut() async throws {
        let base = MemoryStorage<String, String>()
        base.set("hello", forKey: "greeting")

        let lengths = base.mapValues { $0.count }

        #expect(try await lengths.value(forKey: "greeting") == 5)
    }

    @Test func writeOnlyMappingConvertsOnTheWayIn() async throws {
        let base = MemoryStorage<String, String>()
        let numbers = base.writeOnly().mapValues { (number: Int) in String(number) }

        try await numbers.set(7, forKey: "seven")

        #expect(base.value(forKey: "seven") == "7")
    }

    @Test func keysAndRemoveAllGoToTheBase() async throws {
        let base = MemoryStorage<String, String>()
        let numbers = Self.numbers(in: base)
        try await numbers.set(1, forKey: "a")

        let keys = try await numbers.keys()
        try await numbers.removeAll()

        #expect(keys == ["a"])
        #expect(base.count == 0)
    }
}
