import Strata
import Testing

@Suite struct PushingStorageTests {
    @Test func setWritesTheBackAndTheFront() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        let pushing = front.pushing(to: back)

        try await pushing.set(1, forKey: "a")

        #expect(front.value(forKey: "a") == 1)
        #expect(back.value(forKey: "a") == 1)
    }

    @Test func readsComeFromTheFrontAlone() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(1, forKey: "only-in-back")
        let pushing = front.pushing(to: back)

        let value = try await pushing.value(forKey: "only-in-back")

        #expect(value == nil)
    }

    @Test func removeValueRemovesFromBoth() async throws {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        let pushing = front.pushing(to: back)
        try await pushing.set(1, forKey: "a")

        try await pushing.removeValue(forKey: "a")

        #expect(front.value(forKey: "a") == nil)
        #expect(back.value(forKey: "a") == nil)
    }

    @Test func failedBackWriteLeavesTheFrontUntouched() async throws {
        let front = MemoryStorage<String, Int>()
        front.set(1, forKey: "a")
        let pushing = front.pushing(to: FailingStorage<String, Int>(failing: [.set]))

        let error = await #expect(throws: StorageError.self) {
            try await pushing.set(2, forKey: "a")
        }

        #expect(error?.code == .io)
        #expect(front.value(forKey: "a") == 1)
    }

    @Test func writeOnlyLayersCanBePushedTo() async throws {
        let log = MemoryStorage<String, Int>()
        let audit = MemoryStorage<String, Int>()
        let writeOnly = log.writeOnly().pushing(to: audit.writeOnly())

        try await writeOnly.set(1, forKey: "event")

        #expect(log.value(forKey: "event") == 1)
        #expect(audit.value(forKey: "event") == 1)
    }
}
