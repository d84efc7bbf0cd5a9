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
