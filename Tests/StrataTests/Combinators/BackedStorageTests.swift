import Logging
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

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
        try await Self.expectNoBackfillOverASetThatFinishedDuringTheBackRead(
            front.backed(by: back),
            back: back,
            front: { front.value(forKey: "key") }
        )
    }

    /// Holds a read of the back while a set of its key finishes through `backed`: the read answers
    /// what it read, and its backfill does not land over the set.
    static func expectNoBackfillOverASetThatFinishedDuringTheBackRead(
        _ backed: some Storage<String, String>,
        back: GatedStorage<String, String>,
        front: () -> String?
    ) async throws {
        back.base.set("old", forKey: "key")
        back.reads.holdNext()
        async let heldRead = backed.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await backed.set("new", forKey: "key")
        back.reads.release()
        let seenByHeldRead = try await heldRead

        #expect(seenByHeldRead == "old")
        #expect(front() == "new")
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

    // MARK: No lock held while a layer works (an updatable front)

    @Test(.timeLimit(.minutes(1)))
    func aReadIsNotHeldUpByAWriteOfItsKeyStillInFlight() async throws {
        let front = GatedStorage<String, String>()
        let back = MemoryStorage<String, String>()
        back.set("from back", forKey: "key")
        let backed = front.backed(by: back)
        front.writes.holdNext()
        async let heldWrite: Void = backed.set("new", forKey: "key")
        await front.writes.waitUntilHeld()

        // The write holds the front; the read answers from the back and leaves the front alone.
        let read = try await backed.value(forKey: "key")

        #expect(read == "from back")
        #expect(front.base.value(forKey: "key") == nil)
        front.writes.release()
        try await heldWrite
        #expect(front.base.value(forKey: "key") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadOfAnotherKeyFillsTheFrontWhileAWriteIsHeld() async throws {
        let front = GatedStorage<String, String>()
        let back = MemoryStorage<String, String>()
        // Keys share a stripe by hash, and a write of one keeps the others of its stripe from
        // being filled (a missed fill, never a stale one): the other key is one of another stripe.
        let tracker = WriteTracker()
        let other = try #require(
            (0..<100).lazy.map { "b\($0)" }.first { tracker.stripe(for: $0) != tracker.stripe(for: "a") }
        )
        back.set("b from back", forKey: other)
        let backed = front.backed(by: back)
        front.writes.holdNext()
        async let heldWrite: Void = backed.set("new", forKey: "a")
        await front.writes.waitUntilHeld()

        let read = try await backed.value(forKey: other)

        #expect(read == "b from back")
        #expect(front.base.value(forKey: other) == "b from back")
        front.writes.release()
        try await heldWrite
    }

    @Test(.timeLimit(.minutes(1)))
    func aBackfillNeverReplacesAValueTheFrontGotMeanwhile() async throws {
        let front = GatedStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let backed = front.backed(by: back)
        back.reads.holdNext()
        async let heldRead = backed.value(forKey: "key")
        await back.reads.waitUntilHeld()

        // Written to the front directly, not through `backed`: only the conditional fill protects it.
        front.base.set("newer", forKey: "key")
        back.reads.release()

        #expect(try await heldRead == "old")
        #expect(front.base.value(forKey: "key") == "newer")
    }
}

/// Over a front that cannot be written conditionally, writes of a stripe take turns and a backfill
/// that would have to wait for one is skipped: no read waits for a write.
@Suite struct BackedOverAPlainFrontTests {
    /// A storage over a ``GatedStorage`` that is not an `UpdatableStorage`, so `backed(by:)` cannot
    /// fill it conditionally.
    struct PlainStorage: Storage {
        let gated = GatedStorage<String, String>()

        func value(forKey key: String) async throws(StorageError) -> String? {
            try await gated.value(forKey: key)
        }

        func set(_ value: String, forKey key: String) async throws(StorageError) {
            try await gated.set(value, forKey: key)
        }

        func removeValue(forKey key: String) async throws(StorageError) {
            try await gated.removeValue(forKey: key)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadIsNotHeldUpByAWriteStillInFlight() async throws {
        let front = PlainStorage()
        let back = MemoryStorage<String, String>()
        // Enough keys that some share the stripe of the key being written.
        let keys = (0..<256).map { "k\($0)" }
        for key in keys + ["a"] { back.set("\(key) from back", forKey: key) }
        let backed = front.backed(by: back)
        front.gated.writes.holdNext()
        async let heldWrite: Void = backed.set("new", forKey: "a")
        await front.gated.writes.waitUntilHeld()

        #expect(try await backed.value(forKey: "a") == "a from back")
        for key in keys {
            #expect(try await backed.value(forKey: key) == "\(key) from back")
        }
        // The key being written was not filled; so many keys cannot all share its stripe.
        #expect(front.gated.base.value(forKey: "a") == nil)
        #expect(keys.contains { front.gated.base.value(forKey: $0) != nil })

        front.gated.writes.release()
        try await heldWrite
        #expect(try await backed.value(forKey: "a") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func aBackfillNeverLandsAfterAWriteThatFinishedDuringTheBackRead() async throws {
        let front = PlainStorage()
        let back = GatedStorage<String, String>()
        try await BackedStorageTests.expectNoBackfillOverASetThatFinishedDuringTheBackRead(
            front.backed(by: back),
            back: back,
            front: { front.gated.base.value(forKey: "key") }
        )
    }
}

/// A failing cache layer degrades to the layer behind it (Shallows: a layered read fails only if
/// both layers fail).
@Suite struct FailingFrontTests {
    @Test func combinedReadsTheBackWhenTheFrontFailsAndReportsTheFrontsError() async throws {
        let front = FailingStorage<String, String>(failing: [.read], name: "front")
        let back = MemoryStorage<String, String>()
        back.set("from back", forKey: "key")
        let reports = LockedState<[StorageError]>([])
        let combined = front.combined(with: back, reporting: { error in reports.withLock { $0.append(error) } })

        let value = try await combined.value(forKey: "key")

        #expect(value == "from back")
        #expect(reports.withLock { $0.map(\.storage) } == ["front"])
        #expect(front.base.value(forKey: "key") == "from back", "the back's value was still offered to the front")
    }

    @Test func combinedThrowsTheBacksErrorWhenBothFail() async throws {
        let front = FailingStorage<String, String>(failing: [.read], name: "front")
        let back = FailingStorage<String, String>(failing: [.read], name: "back")
        let reports = LockedState<[StorageError]>([])
        let combined = front.combined(with: back, reporting: { error in reports.withLock { $0.append(error) } })

        let error = await #expect(throws: StorageError.self) { try await combined.value(forKey: "key") }

        #expect(error?.storage == "back")
        #expect(reports.withLock { $0.map(\.storage) } == ["front"])
    }

    @Test func combinedAnswersNothingWhenTheFrontFailsAndTheBackHasNothing() async throws {
        let front = FailingStorage<String, String>(failing: [.read], name: "front")
        let reports = LockedState<[StorageError]>([])
        let combined = front.combined(
            with: MemoryStorage<String, String>(),
            reporting: { error in reports.withLock { $0.append(error) } }
        )

        #expect(try await combined.value(forKey: "key") == nil)
        #expect(reports.withLock { $0.count } == 1)
    }

    @Test func backedReadsTheBackWhenTheFrontFailsOverEveryKindOfFront() async throws {
        let back = MemoryStorage<String, String>()
        back.set("from back", forKey: "key")
        let reports = LockedState<[StorageError]>([])
        let report: @Sendable (StorageError) -> Void = { error in reports.withLock { $0.append(error) } }
        let updatable = FailingStorage<String, String>(failing: [.read], name: "front")

        #expect(try await updatable.backed(by: back, reporting: report).value(forKey: "key") == "from back")
        #expect(try await updatable.readOnly().backed(by: back, reporting: report).value(forKey: "key") == "from back")
        #expect(reports.withLock { $0.map(\.storage) } == ["front", "front"])

        let failingBack = FailingStorage<String, String>(failing: [.read], name: "back")
        let error = await #expect(throws: StorageError.self) {
            try await updatable.backed(by: failingBack).value(forKey: "key")
        }
        #expect(error?.storage == "back")
    }

    @Test func aFrontFailureIsLoggedOnce() async throws {
        let (logger, records) = RecordingLogHandler.logger(level: .debug)
        let front = FailingStorage<String, String>(failing: [.read], name: "front")
        let back = MemoryStorage<String, String>()
        back.set("from back", forKey: "key")

        _ = try await front.combined(with: back, logger: logger).value(forKey: "key")

        #expect(records.entries.filter { $0.level == .warning }.count == 1)
    }
}
