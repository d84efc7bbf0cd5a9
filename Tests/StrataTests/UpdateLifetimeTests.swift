import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `update` keeps the lifetime of the entry it changes: a token stored for 10 s in a storage
/// with a longer default (or none) still expires after 10 s once updated; a key the update
/// creates gets the default.
@Suite(.onTestThreads) struct UpdateLifetimeTests {
    @Test func memoryKeepsAnEntrysOwnLifetimeThroughAnUpdate() throws {
        let clock = ManualClock()
        let storage = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        storage.set(1, forKey: "token", timeToLive: .seconds(10))
        try storage.update(forKey: "token") { $0 = ($0 ?? 0) + 1 }
        try storage.update(forKey: "new") { $0 = 7 }

        clock.advance(by: .seconds(9))
        #expect(storage.value(forKey: "token") == 2)
        clock.advance(by: .seconds(1))
        #expect(storage.value(forKey: "token") == nil)
        clock.advance(by: .seconds(49))
        #expect(storage.value(forKey: "new") == 7)
        clock.advance(by: .seconds(1))
        #expect(storage.value(forKey: "new") == nil)
    }

    @Test func memoryWithoutADefaultDoesNotMakeAnUpdatedEntryPermanent() throws {
        let clock = ManualClock()
        let storage = MemoryStorage<String, Int>(clock: clock)
        storage.set(1, forKey: "token", timeToLive: .seconds(10))
        try storage.update(forKey: "token") { $0 = 2 }

        clock.advance(by: .seconds(10))
        #expect(storage.value(forKey: "token") == nil)
    }

    @Test func diskKeepsAnEntrysOwnLifetimeThroughBothUpdates() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        // The synchronous update, the sets before it and the reads, off the async overloads.
        func synchronously() throws {
            try storage.set(Data([1]), forKey: "sync", timeToLive: .seconds(10))
            try storage.set(Data([1]), forKey: "async", timeToLive: .seconds(10))
            try storage.update(forKey: "sync") { $0 = Data([2]) }
            try storage.update(forKey: "new") { $0 = Data([3]) }
        }
        func read(_ key: String) throws -> Data? {
            try storage.value(forKey: key)
        }
        try synchronously()
        try await storage.update(forKey: "async") { $0 = Data([2]) }

        clock.advance(by: .seconds(9))
        #expect(try read("sync") == Data([2]))
        #expect(try read("async") == Data([2]))
        clock.advance(by: .seconds(1))
        #expect(try read("sync") == nil)
        #expect(try read("async") == nil)
        #expect(try read("new") == Data([3]))
    }
}
