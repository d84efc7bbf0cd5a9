import Foundation
import Strata
import Testing

@Suite struct MappedKeysStorageTests {
    private struct UnknownKey: Error {}

    private enum ImageKeys: String, Sendable {
        case kitten, puppy, fish
    }

    @Test func everyOperationUsesTheConvertedKey() async throws {
        let base = MemoryStorage<String, Int>()
        let byNumber = base.mapKeys { (number: Int) in "n\(number)" }

        try await byNumber.set(1, forKey: 1)
        try await byNumber.set(2, forKey: 2)
        try await byNumber.removeValue(forKey: 2)
        try await byNumber.update(forKey: 1) { $0? += 10 }

        #expect(base.value(forKey: "n1") == 11)
        #expect(base.value(forKey: "n2") == nil)
        #expect(try await byNumber.value(forKey: 1) == 11)
    }

    @Test func keyThatFailsToConvertThrowsInvalidKeyAndWritesNothing() async throws {
        let base = MemoryStorage<String, Int>()
        let positive = base.mapKeys { (number: Int) throws in
            guard number > 0 else { throw UnknownKey() }
            return "\(number)"
        }

        let error = await #expect(throws: StorageError.self) {
            try await positive.set(1, forKey: -5)
        }

        #expect(error?.code == .invalidKey)
        #expect(error?.key == "-5")
        #expect(error?.underlying is UnknownKey)
        #expect(base.count == 0)
    }

    @Test func everyOperationRejectsAKeyThatFailsToConvert() async throws {
        let refusing = MemoryStorage<String, Int>().mapKeys { (_: Int) throws -> String in throw UnknownKey() }

        let read = await #expect(throws: StorageError.self) { try await refusing.value(forKey: 1) }
        let remove = await #expect(throws: StorageError.self) { try await refusing.removeValue(forKey: 1) }
        let update = await #expect(throws: StorageError.self) {
            try await refusing.update(forKey: 1) { $0 = 1 }
        }

        #expect(read?.code == .invalidKey)
        #expect(remove?.code == .invalidKey)
        #expect(update?.code == .invalidKey)
    }

    @Test func rawRepresentableKeysUseTheirRawValues() async throws {
        let base = MemoryStorage<String, Data>()
        let images = base.mapKeys(to: ImageKeys.self)

        try await images.set(Data([1]), forKey: .kitten)

        #expect(base.value(forKey: "kitten") == Data([1]))
        #expect(try await images.value(forKey: .puppy) == nil)
    }

    @Test func stringKeysConvertThroughLosslessStringConvertible() async throws {
        let base = MemoryStorage<Int, String>()
        let byString = base.usingStringKeys()

        try await byString.set("forty-two", forKey: "42")

        #expect(base.value(forKey: 42) == "forty-two")
    }

    @Test func stringThatIsNotAKeyThrowsInvalidKey() async throws {
        let base = MemoryStorage<Int, String>()
        let byString = base.usingStringKeys()

        let error = await #expect(throws: StorageError.self) {
            try await byString.set("x", forKey: "not a number")
        }

        #expect(error?.code == .invalidKey)
        #expect(error?.key == "not a number")
        #expect(base.count == 0)
    }

    @Test func removeAllClearsTheBase() async throws {
        let base = MemoryStorage<String, Int>()
        base.set(1, forKey: "n1")

        try await base.mapKeys { (number: Int) in "n\(number)" }.removeAll()

        #expect(base.count == 0)
    }
}
