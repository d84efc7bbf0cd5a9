import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// An async call made from the main actor runs SQLite's I/O on Strata's I/O threads: the
/// storage's clock, read in the I/O path, is the probe.
@Suite struct SQLiteStorageThreadTests {
    @MainActor
    @Test func aMainActorCallerAwaitsSQLiteWorkThatRunsOffTheMainThread() async throws {
        let folder = try TemporaryFolder()
        let probe = ThreadProbe()
        let storage = try SQLiteStorage(path: folder.path("values.sqlite"), options: .init(clock: probe))
        probe.reset()
        let caller = ThreadProbe.currentThread

        try await storage.set(Data("kharkiv".utf8), forKey: "city")
        let value = try await storage.value(forKey: "city")
        let length = try await storage.update(forKey: "city") { (value: inout Data?) -> Int in
            value?.append(contentsOf: Data("!".utf8))
            return value?.count ?? 0
        }
        try await storage.removeValue(forKey: "city")

        #expect(value == Data("kharkiv".utf8))
        #expect(length == 8)
        #expect(!probe.sightings.isEmpty)
        #expect(
            probe.sightings.allSatisfy { !$0.isMainThread && $0.isIOThread && $0.thread != caller },
            "\(probe.sightings)"
        )
    }

    @Test func anAsyncUpdateThatRacesAnotherWriterRunsAgainOnTheNewerValue() async throws {
        let folder = try TemporaryFolder()
        let storage = try SQLiteStorage(path: folder.path("values.sqlite"))
        let other = try SQLiteStorage(path: folder.path("values.sqlite"))
        try await storage.set(Data([1]), forKey: "counter")
        let runs = RunCounter()

        let result = try await storage.update(forKey: "counter") { (value: inout Data?) -> UInt8 in
            if runs.increment() == 1 {
                // Another connection writes between this update's read and its commit.
                try? other.set(Data([10]), forKey: "counter")
            }
            let next = (value?.first ?? 0) + 1
            value = Data([next])
            return next
        }

        #expect(runs.count == 2, "the first run's result was discarded")
        #expect(result == 11)
        #expect(try await storage.value(forKey: "counter") == Data([11]), "the other writer's value was not lost")
    }

    /// A synchronous update that waits for another writer reads the clock once it holds the write
    /// lock: a value that expired during the wait is absent to its closure, not served as live.
    @Test func anUpdateThatWaitedForTheWriteLockSeesAValueThatExpiredMeanwhileAsAbsent() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try SQLiteStorage(path: folder.path("values.sqlite"), options: .init(clock: clock))
        try await storage.set(Data("old".utf8), forKey: "token", timeToLive: .seconds(10))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let calling = DispatchSemaphore(value: 0)
        let seen = LockedBox<Data??>(nil)

        // Blocking waits run on threads of their own, never on the cooperative pool.
        async let holder: Void = Self.onThread {
            try? storage.update(forKey: "other") { (_: inout Data?) in
                holding.signal()
                release.wait()
            }
        }
        await Self.onThread { holding.wait() }
        async let waiter: Void = Self.onThread {
            calling.signal()
            try? storage.update(forKey: "token") { (value: inout Data?) in
                seen.mutate { $0 = .some(value) }
            }
        }
        await Self.onThread { calling.wait() }
        try await Task.sleep(for: .milliseconds(200))  // the waiter is inside update, queued for the lock
        clock.advance(by: .seconds(20))
        release.signal()
        _ = await (holder, waiter)

        #expect(seen.value == .some(nil), "the closure saw \(String(describing: seen.value))")
        #expect(try await storage.value(forKey: "token") == nil)
    }

    /// Runs `body` on a new thread and returns when it has.
    private static func onThread(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                body()
                continuation.resume()
            }.start()
        }
    }
}

/// Counts the runs of an update's closure. Any thread may use it.
private final class RunCounter: Sendable {
    private let runs = LockedCount()
    var count: Int { runs.value }
    func increment() -> Int { runs.increment() }
}

private final class LockedCount: @unchecked Sendable {
    // Safe: `current` is only touched with `lock` held.
    private let lock = NSLock()
    private var current = 0
    var value: Int { lock.withLock { current } }
    func increment() -> Int {
        lock.withLock {
            current += 1
            return current
        }
    }
}
