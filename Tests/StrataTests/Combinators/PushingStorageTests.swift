import Testing

@testable import Strata

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

    // MARK: Writes of one key take turns; nothing else waits

    @Test(.timeLimit(.minutes(1)))
    func aWriteHeldInTheBackDelaysNoWriteOfAnotherKey() async throws {
        let front = MemoryStorage<String, Int>()
        let back = GatedStorage<String, Int>()
        let pushing = front.pushing(to: back)
        back.writes.holdNext()
        async let held: Void = pushing.set(1, forKey: "a")
        await back.writes.waitUntilHeld()

        // Enough keys that striping by hash would have put some beside "a".
        for index in 0..<256 {
            try await pushing.set(index, forKey: "k\(index)")
            try await pushing.removeValue(forKey: "k\(index)")
        }
        try await pushing.set(7, forKey: "b")

        #expect(front.value(forKey: "b") == 7)
        #expect(back.base.value(forKey: "b") == 7)
        #expect(front.value(forKey: "a") == nil)
        back.writes.release()
        try await held
        #expect(front.value(forKey: "a") == 1)
        #expect(back.base.value(forKey: "a") == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadIsNotHeldUpByAWriteOfItsKey() async throws {
        let front = MemoryStorage<String, Int>()
        front.set(1, forKey: "a")
        let back = GatedStorage<String, Int>()
        let pushing = front.pushing(to: back)
        back.writes.holdNext()
        async let held: Void = pushing.set(2, forKey: "a")
        await back.writes.waitUntilHeld()

        #expect(try await pushing.value(forKey: "a") == 1)
        back.writes.release()
        try await held
        #expect(try await pushing.value(forKey: "a") == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func writesOfOneKeyReachBothLayersInTheOrderTheyBegan() async throws {
        let front = MemoryStorage<String, Int>()
        let back = GatedStorage<String, Int>()
        let pushing = front.pushing(to: back)
        back.writes.holdNext()
        async let first: Void = pushing.set(1, forKey: "a")
        await back.writes.waitUntilHeld()

        let second = Task { try await pushing.set(2, forKey: "a") }
        // The second write waits for the first: however long it is given, it reaches neither layer.
        try await Task.sleep(for: .milliseconds(100))
        #expect(back.base.value(forKey: "a") == nil)
        #expect(front.value(forKey: "a") == nil)

        back.writes.release()
        try await first
        try await second.value
        #expect(back.base.value(forKey: "a") == 2)
        #expect(front.value(forKey: "a") == 2)
        #expect(pushing.turns.keysInUse == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aWriteWaitingForItsKeyCanBeCancelledAndWritesNothing() async throws {
        let front = MemoryStorage<String, Int>()
        let back = GatedStorage<String, Int>()
        let pushing = front.pushing(to: back)
        back.writes.holdNext()
        async let first: Void = pushing.set(1, forKey: "a")
        await back.writes.waitUntilHeld()

        let waiting = Task { try await pushing.set(2, forKey: "a") }
        waiting.cancel()
        let error = await #expect(throws: StorageError.self) { try await waiting.value }

        #expect(error?.code == .cancelled)
        #expect(error?.storage == "PushingStorage")
        back.writes.release()
        try await first
        #expect(back.base.value(forKey: "a") == 1)
        #expect(front.value(forKey: "a") == 1)
        #expect(pushing.turns.keysInUse == 0)
    }

    @Test func aStorageWithNoWriteUnderWayKeepsNoStateForAnyKey() async throws {
        let pushing = MemoryStorage<String, Int>().pushing(to: MemoryStorage<String, Int>())
        for index in 0..<100 { try await pushing.set(index, forKey: "k\(index)") }
        #expect(pushing.turns.keysInUse == 0)
    }
}
