import Strata
import Testing

@Suite struct ReadOnlyStorageTests {
    @Test func readsTheBase() async throws {
        let base = MemoryStorage<String, Int>()
        base.set(1, forKey: "a")

        let readOnly = base.readOnly()

        #expect(try await readOnly.value(forKey: "a") == 1)
        #expect(try await readOnly.value(forKey: "b") == nil)
        #expect(try await readOnly.keys() == ["a"])
    }

    @Test func seesLaterWritesToTheBase() async throws {
        let base = MemoryStorage<String, Int>()
        let readOnly = base.readOnly()

        base.set(2, forKey: "a")

        #expect(try await readOnly.value(forKey: "a") == 2)
    }

    @Test func composesWithMapValuesAndBackedBy() async throws {
        let defaults = MemoryStorage<String, Int>()
        defaults.set(3, forKey: "retries")

        let settings = MemoryStorage<String, String>()
            .readOnly()
            .backed(by: defaults.readOnly().mapValues { String($0) })
            .readOnly()

        #expect(try await settings.value(forKey: "retries") == "3")
    }

    @Test func readFailuresPassThrough() async throws {
        let readOnly = FailingStorage<String, Int>(failing: [.read]).readOnly()

        let error = await #expect(throws: StorageError.self) {
            try await readOnly.value(forKey: "a")
        }

        #expect(error?.code == .io)
    }
}
