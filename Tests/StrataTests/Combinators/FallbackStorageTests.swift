import Foundation
import Strata
import Testing

@Suite struct FallbackStorageTests {
    @Test func successfulReadIsNotRecovered() async throws {
        let storage = MemoryStorage<String, Int>()
        storage.set(1, forKey: "a")
        let protected = storage.fallback { _ in -1 }

        let present = try await protected.value(forKey: "a")
        let absent = try await protected.value(forKey: "b")

        #expect(present == 1)
        #expect(absent == nil)
    }

    @Test func failedReadIsReplacedByTheRecoveredValue() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("garbage".utf8), forKey: "a")
        let protected = bytes.json(Int.self).fallback { error in error.code == .decodingFailed ? 15 : -1 }

        let value = try await protected.value(forKey: "a")

        #expect(value == 15)
        #expect(bytes.value(forKey: "a") == Data("garbage".utf8))
    }

    @Test func recoveryCanReadAsAbsent() async throws {
        let protected = FailingStorage<String, Int>(failing: [.read]).fallback { _ in nil }

        let value = try await protected.value(forKey: "a")

        #expect(value == nil)
    }

    @Test func recoveryCanRethrow() async throws {
        let protected = FailingStorage<String, Int>(failing: [.read]).fallback { (error) throws(StorageError) in
            throw error
        }

        let error = await #expect(throws: StorageError.self) {
            try await protected.value(forKey: "a")
        }

        #expect(error?.code == .io)
    }

    /// The documentation's example, as a user writes it: a closure that throws with no type
    /// annotation.
    @Test func recoveryWrittenWithoutAnnotationsRethrowsWhatItDoesNotHandle() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("garbage".utf8), forKey: "stale")
        let prices = bytes.json(Int.self)
        let tolerant = prices.fallback { error in
            guard error.code == .decodingFailed else { throw error }
            return nil
        }
        #expect(try await tolerant.value(forKey: "stale") == nil)

        let failing = FailingStorage<String, Int>(failing: [.read]).fallback { error in
            guard error.code == .decodingFailed else { throw error }
            return nil
        }
        let error = await #expect(throws: StorageError.self) { try await failing.value(forKey: "a") }
        #expect(error?.code == .io)
    }

    /// An error of the app's own becomes a `StorageError` of the failed read, keeping it as the
    /// underlying error.
    @Test func anErrorOfAnotherTypeFromTheRecoveryBecomesAStorageErrorOfTheRead() async throws {
        struct Refused: Error {}
        let failing = FailingStorage<String, Int>(failing: [.read]).fallback { _ in throw Refused() }

        let error = await #expect(throws: StorageError.self) { try await failing.value(forKey: "a") }

        #expect(error?.code == .io)
        #expect(error?.key == "a")
        #expect(error?.underlying is Refused)
        #expect(error?.message.contains("the fallback could not recover") == true)
    }

    @Test func writesAndKeysGoToTheBase() async throws {
        let storage = MemoryStorage<String, Int>()
        let protected = storage.fallback { _ in nil }

        try await protected.set(1, forKey: "a")
        try await protected.set(2, forKey: "b")
        try await protected.removeValue(forKey: "b")

        #expect(storage.value(forKey: "a") == 1)
        #expect(try await protected.keys() == ["a"])
    }
}
