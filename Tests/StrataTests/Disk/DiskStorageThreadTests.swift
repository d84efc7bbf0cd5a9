import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// An async call made from the main actor does its disk I/O on Strata's I/O threads, never on
/// the main thread: the storage's clock, read in the I/O path, is the probe.
@Suite struct DiskStorageThreadTests {
    private static func options(clock: ThreadProbe) -> DiskStorage.Options {
        var options = DiskStorage.Options()
        options.clock = clock
        return options
    }

    @MainActor
    @Test func aMainActorCallerAwaitsDiskIOThatRunsOffTheMainThread() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let probe = ThreadProbe()
        let storage = try DiskStorage(url: folder.url, options: Self.options(clock: probe))
        probe.reset()
        let caller = ThreadProbe.currentThread

        try await storage.set(Data("kharkiv".utf8), forKey: "city")
        let value = try await storage.value(forKey: "city")
        try await storage.update(forKey: "city") { $0?.append(contentsOf: Data("!".utf8)) }
        try await storage.removeValue(forKey: "city")

        #expect(value == Data("kharkiv".utf8))
        #expect(!probe.sightings.isEmpty)
        #expect(
            probe.sightings.allSatisfy { !$0.isMainThread && $0.isIOThread && $0.thread != caller },
            "\(probe.sightings)"
        )
    }

    @MainActor
    @Test func aMemoryOverDiskChainReadsTheDiskOffTheMainThread() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let probe = ThreadProbe()
        let disk = try DiskStorage(url: folder.url, options: Self.options(clock: probe))
        try await disk.set(Data("lviv".utf8), forKey: "city")
        let memory = MemoryStorage<String, Data>()
        let chain = memory.combined(with: disk)
        probe.reset()
        let caller = ThreadProbe.currentThread

        let miss = try await chain.value(forKey: "city")
        let hit = try await chain.value(forKey: "city")

        #expect(miss == Data("lviv".utf8))
        #expect(hit == Data("lviv".utf8))
        #expect(memory.value(forKey: "city") == Data("lviv".utf8), "the disk hit was pulled forward")
        #expect(!probe.sightings.isEmpty)
        #expect(
            probe.sightings.allSatisfy { !$0.isMainThread && $0.isIOThread && $0.thread != caller },
            "\(probe.sightings)"
        )
    }

    /// A caller on no actor resumes on the global executor: its own work after the call (here, the
    /// check itself) never runs on, and so never occupies, a thread meant for blocking I/O.
    @concurrent
    @Test func aCallerOnNoActorGoesOnOffTheIOThreadsAfterTheCall() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let probe = ThreadProbe()
        // The hop is the subject: reads in place (DiskReadInPlaceTests) would never leave.
        var options = Self.options(clock: probe)
        options.readsInPlace = false
        let storage = try DiskStorage(url: folder.url, options: options)
        probe.reset()

        var afterwards: [Bool] = []
        for index in 0..<50 {
            try await storage.set(Data([UInt8(index)]), forKey: "key \(index)")
            afterwards.append(BlockingIOPool.isPoolThread)
            _ = try await storage.value(forKey: "key \(index)")
            afterwards.append(BlockingIOPool.isPoolThread)
        }

        #expect(probe.sightings.allSatisfy { $0.isIOThread }, "the I/O itself ran on the I/O threads")
        #expect(!afterwards.contains(true), "the caller went on on an I/O thread")
    }

    @Test func theImmediateAnswerNeverReadsAFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let probe = ThreadProbe()
        let storage = try DiskStorage(url: folder.url, options: Self.options(clock: probe))
        try storage.set(Data([1]), forKey: "a")
        probe.reset()

        let answer = try storage.immediateValue(forKey: "a")

        guard case .unavailable = answer else {
            Issue.record("expected unavailable, got \(answer)")
            return
        }
        #expect(probe.sightings.isEmpty, "nothing in the I/O path ran")
    }
}
