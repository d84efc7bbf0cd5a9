import Foundation
import Strata
import StrataTestSupport
import Testing

@Suite struct CombinedStorageTests {
    // MARK: Reading and writing

    @Test func frontHitDoesNotReadTheBack() async throws {
        let front = MemoryStorage<String, City>()
        let back = FailingStorage<String, City>(failing: [.read])
        front.set(.kharkiv, forKey: "kharkiv")
        let combined = front.combined(with: back)

        let city = try await combined.value(forKey: "kharkiv")

        #expect(city == .kharkiv)
    }

    @Test func backHitIsPulledIntoTheFront() async throws {
        let front = MemoryStorage<String, City>()
        let back = MemoryStorage<String, City>()
        back.set(.kharkiv, forKey: "kharkiv")
        let combined = front.combined(with: back)

        let city = try await combined.value(forKey: "kharkiv")

        #expect(city == .kharkiv)
        #expect(front.value(forKey: "kharkiv") == .kharkiv)
    }

    @Test func missInBothLayersReadsAsNil() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())

        let city = try await combined.value(forKey: "atlantis")

        #expect(city == nil)
        #expect(combined.front.count == 0)
    }

    @Test func setWritesBothLayers() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())

        try await combined.set(.kharkiv, forKey: "kharkiv")

        #expect(combined.front.value(forKey: "kharkiv") == .kharkiv)
        #expect(combined.back.value(forKey: "kharkiv") == .kharkiv)
    }

    @Test func removeValueRemovesFromBothLayers() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())
        try await combined.set(.kharkiv, forKey: "kharkiv")

        try await combined.removeValue(forKey: "kharkiv")

        #expect(combined.front.value(forKey: "kharkiv") == nil)
        #expect(combined.back.value(forKey: "kharkiv") == nil)
        #expect(try await combined.value(forKey: "kharkiv") == nil)
    }

    @Test func failedBackWriteLeavesTheFrontUntouched() async throws {
        let front = MemoryStorage<String, City>()
        let back = FailingStorage<String, City>(failing: [.set])
        front.set(.kyiv, forKey: "city")
        back.base.set(.kyiv, forKey: "city")
        let combined = front.combined(with: back)

        let error = await #expect(throws: StorageError.self) {
            try await combined.set(.kharkiv, forKey: "city")
        }

        #expect(error?.code == .io)
        #expect(front.value(forKey: "city") == .kyiv)
        #expect(back.base.value(forKey: "city") == .kyiv)
    }

    @Test func failedFrontWriteRemovesTheFrontsStaleValue() async throws {
        let front = FailingStorage<String, City>(failing: [.set])
        let back = MemoryStorage<String, City>()
        front.base.set(.kyiv, forKey: "city")
        let combined = front.combined(with: back)

        let error = await #expect(throws: StorageError.self) {
            try await combined.set(.kharkiv, forKey: "city")
        }

        #expect(error?.code == .io)
        #expect(front.base.value(forKey: "city") == nil)
        #expect(back.value(forKey: "city") == .kharkiv)
        #expect(try await combined.value(forKey: "city") == .kharkiv)
    }

    @Test func failedBackfillDoesNotFailTheRead() async throws {
        let front = FailingStorage<String, City>(failing: [.set])
        let back = MemoryStorage<String, City>()
        back.set(.kharkiv, forKey: "kharkiv")
        let combined = front.combined(with: back)

        let city = try await combined.value(forKey: "kharkiv")

        #expect(city == .kharkiv)
        #expect(front.base.value(forKey: "kharkiv") == nil)
    }

    @Test func failedBackReadFailsTheRead() async throws {
        let combined = MemoryStorage<String, City>().combined(with: FailingStorage<String, City>(failing: [.read]))

        let error = await #expect(throws: StorageError.self) {
            try await combined.value(forKey: "kharkiv")
        }

        #expect(error?.code == .io)
        #expect(error?.key == "kharkiv")
    }

    @Test func keysComeFromTheBack() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())
        try await combined.set(.kharkiv, forKey: "kharkiv")
        combined.back.set(.lviv, forKey: "lviv")

        let keys = try await combined.keys()

        #expect(Set(keys) == ["kharkiv", "lviv"])
    }

    @Test func removeAllClearsBothLayers() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())
        try await combined.set(.kharkiv, forKey: "kharkiv")
        try await combined.set(.lviv, forKey: "lviv")

        try await combined.removeAll()

        #expect(combined.front.count == 0)
        #expect(combined.back.count == 0)
        #expect(try await combined.value(forKey: "kharkiv") == nil)
    }

    // MARK: Update

    @Test func updateChangesTheBackAndThenTheFront() async throws {
        let combined = MemoryStorage<String, [Int]>().combined(with: MemoryStorage<String, [Int]>())
        combined.back.set([1], forKey: "list")

        try await combined.update(forKey: "list") { $0?.append(2) }

        #expect(combined.back.value(forKey: "list") == [1, 2])
        #expect(combined.front.value(forKey: "list") == [1, 2])
    }

    @Test func updateToNilRemovesFromBothLayers() async throws {
        let combined = MemoryStorage<String, Int>().combined(with: MemoryStorage<String, Int>())
        try await combined.set(1, forKey: "a")

        try await combined.update(forKey: "a") { $0 = nil }

        #expect(combined.front.value(forKey: "a") == nil)
        #expect(combined.back.value(forKey: "a") == nil)
    }

    @Test func throwingUpdateChangesNeitherLayer() async throws {
        struct Refusal: Error {}
        let combined = MemoryStorage<String, Int>().combined(with: MemoryStorage<String, Int>())
        try await combined.set(1, forKey: "a")

        let error = await #expect(throws: StorageError.self) {
            try await combined.update(forKey: "a") { (value: inout Int?) in
                value = 2
                throw Refusal()
            }
        }

        #expect(error?.code == .updateAborted)
        #expect(combined.front.value(forKey: "a") == 1)
        #expect(combined.back.value(forKey: "a") == 1)
    }

    @Test func concurrentUpdatesAreNeverLost() async throws {
        let combined = MemoryStorage<String, Int>().combined(with: MemoryStorage<String, Int>())

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<500 {
                group.addTask {
                    try await combined.update(forKey: "counter", default: 0) { $0 += 1 }
                }
            }
            try await group.waitForAll()
        }

        // Overlapping updates may reach the layers in different orders, so the front drops the
        // key rather than keep a value the back has replaced: it holds the last count or nothing.
        #expect(combined.back.value(forKey: "counter") == 500)
        #expect([nil, 500].contains(combined.front.value(forKey: "counter")))
        #expect(try await combined.value(forKey: "counter") == 500)
    }

    // MARK: Layers (Shallows issues: three layers, purging memory)

    @Test func threeLayerChainNeedsNoAnnotationsAndPullsValuesForward() async throws {
        let remote = MemoryStorage<String, Data>().json(City.self)
        try await remote.set(.kharkiv, forKey: "kharkiv")

        let cache = MemoryStorage<String, City>()
            .combined(with: MemoryStorage<String, City>())
            .combined(with: remote)
        let city = try await cache.value(forKey: "kharkiv")

        #expect(city == .kharkiv)
        #expect(cache.front.front.value(forKey: "kharkiv") == .kharkiv)
        #expect(cache.front.back.value(forKey: "kharkiv") == .kharkiv)
    }

    @Test func threeLayerChainWritesEveryLayer() async throws {
        let remote = MemoryStorage<String, Data>().json(City.self)
        let cache = MemoryStorage<String, City>()
            .combined(with: MemoryStorage<String, City>())
            .combined(with: remote)

        try await cache.set(.lviv, forKey: "lviv")

        #expect(cache.front.front.value(forKey: "lviv") == .lviv)
        #expect(cache.front.back.value(forKey: "lviv") == .lviv)
        #expect(try await remote.value(forKey: "lviv") == .lviv)
    }

    @Test func purgingTheFrontKeepsTheBackAndTheNextReadRefillsIt() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())
        try await combined.set(.kharkiv, forKey: "kharkiv")
        try await combined.set(.lviv, forKey: "lviv")

        combined.front.removeAll()

        #expect(combined.front.count == 0)
        #expect(combined.back.count == 2)
        #expect(try await combined.value(forKey: "kharkiv") == .kharkiv)
        #expect(combined.front.value(forKey: "kharkiv") == .kharkiv)
        #expect(combined.front.value(forKey: "lviv") == nil)
    }

    @Test func removingOneValueFromTheFrontKeepsItInTheBack() async throws {
        let combined = MemoryStorage<String, City>().combined(with: MemoryStorage<String, City>())
        try await combined.set(.kharkiv, forKey: "kharkiv")

        combined.front.removeValue(forKey: "kharkiv")

        #expect(combined.back.value(forKey: "kharkiv") == .kharkiv)
        #expect(try await combined.value(forKey: "kharkiv") == .kharkiv)
    }

    // MARK: Stale backfill

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotOverwriteASetThatFinishedDuringTheBackRead() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let combined = front.combined(with: back)
        back.reads.holdNext()
        async let heldRead = combined.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await combined.set("new", forKey: "key")
        back.reads.release()
        let seenByHeldRead = try await heldRead

        #expect(seenByHeldRead == "old")
        #expect(front.value(forKey: "key") == "new")
        #expect(try await combined.value(forKey: "key") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotResurrectAValueRemovedDuringTheBackRead() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let combined = front.combined(with: back)
        back.reads.holdNext()
        async let heldRead = combined.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await combined.removeValue(forKey: "key")
        back.reads.release()
        _ = try await heldRead

        #expect(front.value(forKey: "key") == nil)
        #expect(try await combined.value(forKey: "key") == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotOverwriteAnUpdateThatFinishedDuringTheBackRead() async throws {
        let front = MemoryStorage<String, Int>()
        let back = GatedStorage<String, Int>()
        back.base.set(1, forKey: "counter")
        let combined = front.combined(with: back)
        back.reads.holdNext()
        async let heldRead = combined.value(forKey: "counter")
        await back.reads.waitUntilHeld()

        try await combined.update(forKey: "counter") { $0 = ($0 ?? 0) + 1 }
        back.reads.release()
        _ = try await heldRead

        #expect(front.value(forKey: "counter") == 2)
        #expect(try await combined.value(forKey: "counter") == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillDoesNotRefillTheFrontAfterARemoveAllDuringTheBackRead() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let combined = front.combined(with: back)
        back.reads.holdNext()
        async let heldRead = combined.value(forKey: "key")
        await back.reads.waitUntilHeld()

        try await combined.removeAll()
        back.reads.release()
        _ = try await heldRead

        #expect(front.value(forKey: "key") == nil)
        #expect(try await combined.value(forKey: "key") == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func backfillAlreadyStoringCannotUndoAConcurrentRemoveAll() async throws {
        let front = GatedStorage<String, String>()
        let back = MemoryStorage<String, String>()
        back.set("old", forKey: "key")
        let combined = front.combined(with: back)
        front.writes.holdNext()
        async let heldRead = combined.value(forKey: "key")
        await front.writes.waitUntilHeld()

        let finished = Flag()
        async let clearing: Void = {
            try await combined.removeAll()
            finished.raise()
        }()
        // Give the clear every chance to finish before the backfill stores its value: the outcome
        // must be the same whether it finished (no gate) or is waiting for the backfill (gate).
        for _ in 0..<1_000 where !finished.isRaised {
            await Task.yield()
        }
        front.writes.release()
        _ = try await heldRead
        try await clearing

        #expect(front.base.value(forKey: "key") == nil)
        #expect(try await combined.value(forKey: "key") == nil)
    }

    // MARK: No waiting on locks (reads are never delayed by writes)

    @Test(.timeLimit(.minutes(1)))
    func readOfAnotherKeyIsNotDelayedByAHeldBackWrite() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        // Keys 0..63: with any striping of 16 or 64 stripes, some share a stripe with "held".
        for index in 0..<64 { back.base.set("value \(index)", forKey: "key \(index)") }
        let combined = front.combined(with: back)
        back.writes.holdNext()
        async let heldWrite: Void = combined.set("new", forKey: "held")
        await back.writes.waitUntilHeld()

        var seen: [String?] = []
        for index in 0..<64 {
            seen.append(try await combined.value(forKey: "key \(index)"))
        }

        back.writes.release()
        try await heldWrite
        #expect(seen == (0..<64).map { "value \($0)" })
        // Only keys that share the held write's stripe (1 in 16, about 4 of 64) skip the backfill.
        let kept = (0..<64).filter { front.value(forKey: "key \($0)") != nil }.count
        #expect(kept >= 40, "\(kept) of 64 values were pulled into the front")
        #expect(try await combined.value(forKey: "held") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func readOfAKeyWhoseWriteIsHeldAnswersFromTheBackWithoutWaiting() async throws {
        let front = MemoryStorage<String, String>()
        let back = GatedStorage<String, String>()
        back.base.set("old", forKey: "key")
        let combined = front.combined(with: back)
        back.writes.holdNext()
        async let heldWrite: Void = combined.set("new", forKey: "key")
        await back.writes.waitUntilHeld()

        let seenDuringTheWrite = try await combined.value(forKey: "key")

        #expect(seenDuringTheWrite == "old")
        #expect(front.value(forKey: "key") == nil, "a value read while a write is in flight is not kept")
        back.writes.release()
        try await heldWrite
        #expect(front.value(forKey: "key") == "new")
        #expect(try await combined.value(forKey: "key") == "new")
    }

    @Test(.timeLimit(.minutes(1)))
    func readWaitingOnTheBackCanBeCancelledWhileAWriteOfItsKeyIsHeld() async throws {
        let back = HangingStorage<String, String>()
        let combined = MemoryStorage<String, String>().combined(with: back)
        back.writes.holdNext()
        async let heldWrite: Void = combined.set("new", forKey: "key")
        await back.writes.waitUntilHeld()

        let read = Task { try await combined.value(forKey: "key") }
        await Task.yield()
        read.cancel()
        let outcome = await read.result

        #expect(throws: StorageError.self) { try outcome.get() }
        #expect((try? outcome.get()) == nil)
        if case .failure(let error as StorageError) = outcome {
            #expect(error.code == .cancelled)
        }
        back.writes.release()
        try await heldWrite
    }

    // MARK: Overlapping writes

    @Test(.timeLimit(.minutes(1)))
    func overlappingWritesThatReachTheLayersInDifferentOrdersLeaveNoStaleFront() async throws {
        let front = GatedStorage<String, String>()
        let back = MemoryStorage<String, String>()
        let combined = front.combined(with: back)
        // The first write reaches the back, then waits before the front; the second passes it.
        front.writes.holdNext()
        async let first: Void = combined.set("first", forKey: "key")
        await front.writes.waitUntilHeld()
        try await combined.set("second", forKey: "key")
        #expect(back.value(forKey: "key") == "second")
        #expect(front.base.value(forKey: "key") == nil, "the second write overlapped the first: it dropped the key")

        front.writes.release()
        try await first

        // The back ends with "second" and the front got "first" last: the first write, which
        // overlapped the second, removed the key from the front as it ended.
        #expect(back.value(forKey: "key") == "second")
        #expect(front.base.value(forKey: "key") == nil)
        #expect(try await combined.value(forKey: "key") == "second")
        #expect(front.base.value(forKey: "key") == "second")
    }

    @Test(.timeLimit(.minutes(1)))
    func writeOverlappingARemoveAllDoesNotSurviveInTheFrontAlone() async throws {
        let front = GatedStorage<String, String>()
        let back = MemoryStorage<String, String>()
        let combined = front.combined(with: back)
        front.writes.holdNext()
        async let write: Void = combined.set("value", forKey: "key")
        await front.writes.waitUntilHeld()

        try await combined.removeAll()
        front.writes.release()
        try await write

        #expect(back.value(forKey: "key") == nil)
        #expect(front.base.value(forKey: "key") == nil)
        #expect(try await combined.value(forKey: "key") == nil)
    }
}

/// A storage whose reads wait until their task is cancelled, then throw `cancelled`, and whose
/// writes can be held at a gate (and then store nothing). Any task may use it.
private struct HangingStorage<Key: Hashable & Sendable, Value: Sendable>: Storage {
    let writes = Gate()

    func value(forKey key: Key) async throws(StorageError) -> Value? {
        do {
            try await Task.sleep(for: .seconds(3_600))
        } catch {
            throw StorageError(.cancelled, storage: "hanging", message: "the read was cancelled")
        }
        return nil
    }

    func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        await writes.passThrough()
    }

    func removeValue(forKey key: Key) async throws(StorageError) {
        await writes.passThrough()
    }
}
