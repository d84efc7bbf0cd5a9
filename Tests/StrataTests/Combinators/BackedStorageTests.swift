import Strata
import Testing

@Suite struct BackedStorageTests {
    @Test func frontHitDoesNotReadTheBack() async throws {
        let front = MemoryStorage<String, String>()
        front.set("front", forKey: "key")
        let backed = front.backed(by: FailingStorage<String, String>(failing: [.read]))

        let value = try await backed.value(forKey: "key")

        #expect(value == "front")
    }

    @Test func backHitIsPulledIntoAWritableFront() async throws {
        let front = MemoryStorage<String, String>()
        let back = MemoryStorage<String, String>()
        back.set("back", forKey: "key")
        let backed = front.backed(by: back)

        let value = try await backed.value(forKey: "key")

        #expect(value == "back")
        #expect(front.value(forKey: "key") == "back")
    }

    @Test func readOnlyFrontIsNeverFilled() async throws {
        let front = MemoryStorage<String, String>()
        let back = MemoryStorage<String, String>()
        back.set("back", forKey: "key")
        let backed = front.readOnly().backed(by: back.readOnly())

        let value = try await backed.value(forKey: "key")

        #expect(value == "back")
        #expect(front.value(forKey: "key") == nil)
    }

    @Test func setWritesTheFrontOnly() async throws {
        let front = MemoryStorage<String, String>()
        let back = MemoryStorage<String, String>()
        let backed = front.backed(by: back)

        try await backed.set("new", forKey: "key")

        #expect(front.value(forKey: "key") == "new")
        #expect(back.value(forKey: "key") == nil)
    }

    @Test func removeValueRemovesFromTheFrontAndTheBackStillSuppliesIt() async throws {
        let front = MemoryStorage<String, String>()
        let back = MemoryStorage<String, String>()
        back.set("back", forKey: "key")
        let backed = front.backed(by: back)
        try await backed.set("front", forKey: "key")

        try await backed.removeValue(forKey: "key")

        #expect(front.value(forKey: "key") == nil)
        #expect(try await backed.value(forKey: "key") == "back")
    }

    @Test func failedBackfillDoesNotFailTheRead() async throws {
        let front = FailingStorage<String, String>(failing: [.set])
        let back = MemoryStorage<String, String>()
        back.set("back", forKey: "key")
        let backed = front.backed(by: back)

        let value = try await backed.value(forKey: "key")

        #expect(value == "back")
    }

    @Test func failedBackReadFailsTheRead() async throws {
        let backed = MemoryStorage<String, String>().backed(by: FailingStorage<String, String>(failing: [.read]))

        let error = await #expect(throws: StorageError.self) {
            try await backed.value(forKey: "key")
        }

        #expect(error?.code == .io)
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotOverwriteASetThatFinishedDuringTheBackRead() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let backed = front.backed(by: back)
        back.reads.holdNext()
        async let heldRead = backed.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await backed.set("new", forKey: "key")
        back.reads.release()
        let seenByHeldRead = try await heldRead

        #expect(seenByHeldRead == "old")
        #expect(front.value(forKey: "key") == "new")
        #expect(back.base.value(forKey: "key") == "old")
        #expect(try await backed.value(forKey: "key") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotUndoARemoveThatFinishedDuringTheBackRead() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let backed = front.backed(by: back)
        back.reads.holdNext()
        async let heldRead = backed.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await backed.removeValue(forKey: "key")
        back.reads.release()
        _ = try await heldRead

        #expect(front.value(forKey: "key") == nil)
    }
}
