import Foundation
import Strata
import Testing

@Suite struct DefaultingStorageTests {
    @Test func absentKeyReadsTheDefault() async throws {
        let defaulted = MemoryStorage<String, Int>().defaulting(to: -1)

        let value = try await defaulted.value(forKey: "missing")

        #expect(value == -1)
    }

    @Test func storedValueReadsAsItself() async throws {
        let storage = MemoryStorage<String, Int>()
        storage.set(7, forKey: "seven")

        let value = try await storage.defaulting(to: -1).value(forKey: "seven")

        #expect(value == 7)
    }

    @Test func failedReadStillThrows() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("not json".utf8), forKey: "list")
        let defaulted = bytes.json([Int].self).defaulting(to: [])

        let error = await #expect(throws: StorageError.self) {
            try await defaulted.value(forKey: "list")
        }

        #expect(error?.code == .decodingFailed)
    }

    @Test func updateStartsFromTheDefault() async throws {
        let storage = MemoryStorage<String, [Int]>()

        try await storage.defaulting(to: []).update(forKey: "first") { $0.append(10) }

        #expect(storage.value(forKey: "first") == [10])
    }

    @Test func updateOfADamagedValueFailsAndKeepsIt() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("not json".utf8), forKey: "list")
        let defaulted = bytes.json([Int].self).defaulting(to: [])

        let error = await #expect(throws: StorageError.self) {
            try await defaulted.update(forKey: "list") { $0.append(10) }
        }

        #expect(error?.code == .decodingFailed)
        #expect(bytes.value(forKey: "list") == Data("not json".utf8))
    }

    @Test func optionalUpdateToNilRemovesTheValue() async throws {
        let storage = MemoryStorage<String, [Int]>()
        storage.set([1], forKey: "list")

        try await storage.defaulting(to: []).update(forKey: "list") { (value: inout [Int]?) in value = nil }

        #expect(storage.value(forKey: "list") == nil)
    }

    @Test func concurrentAppendsAreNeverLost() async throws {
        let storage = MemoryStorage<String, [Int]>()
        storage.set([0], forKey: "test")
        let defaulted = storage.defaulting(to: [])

        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 1...100 {
                group.addTask {
                    try await defaulted.update(forKey: "test") { $0.append(number) }
                }
            }
            try await group.waitForAll()
        }

        #expect(storage.value(forKey: "test")?.sorted() == Array(0...100))
    }

    @Test func writesGoToTheBase() async throws {
        let storage = MemoryStorage<String, Int>()
        let defaulted = storage.defaulting(to: 0)

        try await defaulted.set(5, forKey: "a")
        try await defaulted.set(6, forKey: "b")
        try await defaulted.removeValue(forKey: "b")

        #expect(storage.value(forKey: "a") == 5)
        #expect(storage.value(forKey: "b") == nil)
        #expect(try await defaulted.value(forKey: "b") == 0)
    }
}
