import Foundation
import Observation
import StrataTestSupport
import Testing

@testable import Strata

/// `changes()` tells every key a memory storage sets, removes, expires, evicts or clears, without
/// making a writer wait; an `ObservedValue` follows one key from its first read and stops when
/// released.
@Suite(.onTestThreads) struct StorageChangeTests {
    /// The first `count` changes of `stream`, or fewer if none comes for ten seconds.
    static func first(_ count: Int, of stream: AsyncStream<StorageChange<String>>) async -> [String] {
        await firstChanges(count, of: stream)
    }

    @Test func everyKindOfChangeIsToldInOrder() async throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed, clock: clock)
        let stream = cache.changes()

        cache.set(1, forKey: "a")
        cache.set(2, forKey: "a")  // replaced: one set, no removal
        cache.set(3, forKey: "b", timeToLive: .seconds(1))
        cache.set(4, forKey: "c")  // evicts a
        try cache.update(forKey: "c") { $0 = 5 }
        clock.advance(by: .seconds(2))
        #expect(cache.value(forKey: "b") == nil)  // expired
        cache.removeValue(forKey: "c")
        cache.setValues([(key: "d", value: 6)], timeToLive: nil)
        cache.removeAll()

        #expect(
            await Self.first(10, of: stream) == [
                "a set", "a set", "b set", "a evicted", "c set", "c set", "b expired", "c removed", "d set",
                "d cleared",
            ]
        )
    }

    @Test func aValueTheStorageDoesNotKeepIsNotToldAsSet() async throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 10)
        let stream = cache.changes()
        cache.set(Data(count: 5), forKey: "small")
        cache.set(Data(count: 50), forKey: "small")  // costlier than the limit: the old one goes
        cache.set(Data(count: 1), forKey: "x", timeToLive: .zero)  // already run out
        cache.set(Data(count: 1), forKey: "last")
        #expect(await Self.first(3, of: stream) == ["small set", "small evicted", "last set"])
    }

    @Test func aListenerThatNeverReadsHoldsNoWriterBack() async throws {
        let cache = MemoryStorage<String, Int>()
        let stream = cache.changes(bufferingNewest: 4)
        for index in 0..<10_000 { cache.set(index, forKey: "k\(index)") }
        // Only the newest four were kept for it.
        #expect(await Self.first(4, of: stream) == ["k9996 set", "k9997 set", "k9998 set", "k9999 set"])
    }

    @Test func anEndedListenerIsForgotten() async throws {
        let cache = MemoryStorage<String, Int>()
        do {
            let stream = cache.changes()
            #expect(cache.changeListenerCount == 1)
            cache.set(1, forKey: "a")
            _ = await Self.first(1, of: stream)
        }
        #expect(await eventually(within: .seconds(10)) { cache.changeListenerCount == 0 })
    }

    @Test func aDiskStorageTellsItsOwnChanges() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options(maximumCount: 2)
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        let stream = disk.changes()

        // The synchronous methods, which an async function would not pick.
        func act() throws {
            try disk.set(Data("1".utf8), forKey: "a")
            try disk.set(Data("2".utf8), forKey: "b", timeToLive: .seconds(1))
            try disk.update(forKey: "a") { $0 = Data("3".utf8) }
            try disk.set(Data("4".utf8), forKey: "c")  // evicts the least recently used, b
            try disk.removeValue(forKey: "c")
            try disk.removeAll()
        }
        try act()

        #expect(
            await Self.first(7, of: stream) == [
                "a set", "b set", "a set", "b evicted", "c set", "c removed", "a cleared",
            ]
        )
    }

    // MARK: ObservedValue

    /// Waits, through Observation, until `condition` holds; false after ten seconds without it.
    @MainActor
    private func waitUntil(_ observed: ObservedValue<MemoryStorage<String, Int>>, _ condition: () -> Bool) async -> Bool
    {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let (changed, signal) = AsyncStream<Void>.makeStream()
            withObservationTracking {
                _ = observed.value
                _ = observed.readCount
            } onChange: {
                signal.yield()
            }
            if condition() { return true }
            var iterator = changed.makeAsyncIterator()
            _ = await iterator.next()
            await Task.yield()
        }
        return condition()
    }

    @MainActor
    @Test func anObservedValueFollowsWritesMadeElsewhere() async throws {
        let cache = MemoryStorage<String, Int>()
        cache.set(1, forKey: "score")
        let observed = cache.observedValue(forKey: "score")
        #expect(!observed.isObserving)
        #expect(cache.changeListenerCount == 0)

        #expect(await waitUntil(observed) { observed.value == 1 })
        #expect(observed.isObserving)

        await Task.detached { cache.set(2, forKey: "score") }.value
        #expect(await waitUntil(observed) { observed.value == 2 })
        cache.set(7, forKey: "other")
        await Task.detached { cache.removeValue(forKey: "score") }.value
        #expect(await waitUntil(observed) { observed.value == nil && observed.readCount >= 3 })
        // The write to another key caused no read.
        #expect(observed.readCount == 3)
    }

    @MainActor
    @Test func anObservedValueThatIsNeverReadDoesNoWork() async throws {
        let cache = MemoryStorage<String, Int>()
        // As SwiftUI does with a @State initial value it discards: made, never read.
        for _ in 0..<100 { _ = cache.observedValue(forKey: "score") }
        cache.set(1, forKey: "score")
        #expect(cache.changeListenerCount == 0)
    }

    @MainActor
    @Test func aReleasedObservedValueStopsListening() async throws {
        let cache = MemoryStorage<String, Int>()
        var observed: ObservedValue<MemoryStorage<String, Int>>? = cache.observedValue(forKey: "score")
        cache.set(1, forKey: "score")
        #expect(await waitUntil(observed!) { observed!.value == 1 })
        #expect(cache.changeListenerCount == 1)

        observed = nil

        #expect(await eventually(within: .seconds(10)) { cache.changeListenerCount == 0 })
    }
}
