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

    /// A pushing storage over a gated back, with a write of `value` to "a" held in the back.
    struct HeldWrite {
        let front = MemoryStorage<String, Int>()
        let back = GatedStorage<String, Int>()
        let pushing: PushingStorage<MemoryStorage<String, Int>, GatedStorage<String, Int>>
        let write: Task<Void, any Error>

        init(_ value: Int, frontHolding existing: Int? = nil) async {
            if let existing { front.set(existing, forKey: "a") }
            let pushing = front.pushing(to: back)
            self.pushing = pushing
            back.writes.holdNext()
            write = Task { try await pushing.set(value, forKey: "a") }
            await back.writes.waitUntilHeld()
        }

        /// Lets the held write go on, and waits for it.
        func finish() async throws {
            back.writes.release()
            try await write.value
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aWriteHeldInTheBackDelaysNoWriteOfAnotherKey() async throws {
        let held = await HeldWrite(1)

        // Enough keys that striping by hash would have put some beside "a".
        for index in 0..<256 {
            try await held.pushing.set(index, forKey: "k\(index)")
            try await held.pushing.removeValue(forKey: "k\(index)")
        }
        try await held.pushing.set(7, forKey: "b")

        #expect(held.front.value(forKey: "b") == 7)
        #expect(held.back.base.value(forKey: "b") == 7)
        #expect(held.front.value(forKey: "a") == nil)
        try await held.finish()
        #expect(held.front.value(forKey: "a") == 1)
        #expect(held.back.base.value(forKey: "a") == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadIsNotHeldUpByAWriteOfItsKey() async throws {
        let held = await HeldWrite(2, frontHolding: 1)

        #expect(try await held.pushing.value(forKey: "a") == 1)
        try await held.finish()
        #expect(try await held.pushing.value(forKey: "a") == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func writesOfOneKeyReachBothLayersInTheOrderTheyBegan() async throws {
        let held = await HeldWrite(1)

        let second = Task { try await held.pushing.set(2, forKey: "a") }
        // The second write waits for the first: however long it is given, it reaches neither layer.
        try await Task.sleep(for: .milliseconds(100))
        #expect(held.back.base.value(forKey: "a") == nil)
        #expect(held.front.value(forKey: "a") == nil)

        try await held.finish()
        try await second.value
        #expect(held.back.base.value(forKey: "a") == 2)
        #expect(held.front.value(forKey: "a") == 2)
        #expect(held.pushing.turns.keysInUse == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aWriteWaitingForItsKeyCanBeCancelledAndWritesNothing() async throws {
        let held = await HeldWrite(1)

        let waiting = Task { try await held.pushing.set(2, forKey: "a") }
        waiting.cancel()
        let error = await #expect(throws: StorageError.self) { try await waiting.value }

        #expect(error?.code == .cancelled)
        #expect(error?.storage == "PushingStorage")
        try await held.finish()
        #expect(held.back.base.value(forKey: "a") == 1)
        #expect(held.front.value(forKey: "a") == 1)
        #expect(held.pushing.turns.keysInUse == 0)
    }

    @Test func aStorageWithNoWriteUnderWayKeepsNoStateForAnyKey() async throws {
        let pushing = MemoryStorage<String, Int>().pushing(to: MemoryStorage<String, Int>())
        for index in 0..<100 { try await pushing.set(index, forKey: "k\(index)") }
        #expect(pushing.turns.keysInUse == 0)
    }
}
