import Strata
import Testing

@Suite struct WriteOnlyStorageTests {
    @Test func writesGoToTheBase() async throws {
        let base = MemoryStorage<String, Int>()
        let writeOnly = base.writeOnly()

        try await writeOnly.set(1, forKey: "a")
        try await writeOnly.set(2, forKey: "b")
        try await writeOnly.removeValue(forKey: "b")

        #expect(base.value(forKey: "a") == 1)
        #expect(base.value(forKey: "b") == nil)
    }

    @Test func removeAllClearsTheBase() async throws {
        let base = MemoryStorage<String, Int>()
        base.set(1, forKey: "a")

        try await base.writeOnly().removeAll()

        #expect(base.count == 0)
    }

    @Test func writeFailuresPassThrough() async throws {
        let writeOnly = FailingStorage<String, Int>(failing: [.set]).writeOnly()

        let error = await #expect(throws: StorageError.self) {
            try await writeOnly.set(1, forKey: "a")
        }

        #expect(error?.code == .io)
    }
}
