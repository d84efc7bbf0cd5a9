import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `lifetime(forKey:)` says how long a value has left, without counting a use.
@Suite(.onTestThreads) struct LifetimeTests {
    @Test func memoryReportsWhatIsLeftUnlimitedOrNothing() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        cache.set(1, forKey: "default")
        cache.set(2, forKey: "short", timeToLive: .seconds(10))
        let plain = MemoryStorage<String, Int>()
        plain.set(3, forKey: "forever")

        clock.advance(by: .seconds(4))

        #expect(cache.lifetime(forKey: "default") == .remaining(.seconds(56)))
        #expect(cache.lifetime(forKey: "short") == .remaining(.seconds(6)))
        #expect(cache.lifetime(forKey: "missing") == nil)
        #expect(plain.lifetime(forKey: "forever") == .unlimited)
        clock.advance(by: .seconds(6))
        #expect(cache.lifetime(forKey: "short") == nil, "an expired value has no lifetime")
        #expect(cache.statistics.hits == 0 && cache.statistics.misses == 0, "asking is not a use")
    }

    /// `Lifetime.unlimited` given to a write outlives the storage's default, on memory and disk;
    /// `setKeepingLifetime(_:forKey:orGiving:)` keeps a replaced value's lifetime and gives a new
    /// one its own.
    @Test func anUnlimitedLifetimeOutlivesTheDefaultOnMemoryAndDisk() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        let memory = MemoryStorage<String, Data>(timeToLive: .seconds(60), clock: clock)
        var options = DiskStorage.Options()
        options.clock = clock
        options.timeToLive = .seconds(60)
        let disk = try DiskStorage(url: folder.url, options: options)
        let storages: [any LifetimeStorage<String, Data>] = [memory, disk]
        for storage in storages {
            try await storage.set(Data("a".utf8), forKey: "forever", lifetime: .unlimited)
            try await storage.update(forKey: "created", lifetime: .unlimited) { $0 = $0 ?? Data("b".utf8) }
            try await storage.set(Data("c".utf8), forKey: "kept", timeToLive: .seconds(10))
            try await storage.setKeepingLifetime(Data("d".utf8), forKey: "kept", orGiving: .unlimited)
            try await storage.setKeepingLifetime(Data("e".utf8), forKey: "new", orGiving: .unlimited)
            try await storage.set(Data("f".utf8), forKey: "default")
        }
        clock.advance(by: .seconds(11))
        for storage in storages {
            #expect(try await storage.lifetime(forKey: "kept") == nil, "a kept lifetime of 10 s ran out")
            #expect(try await storage.lifetime(forKey: "default") == .remaining(.seconds(49)))
        }
        clock.advance(by: .seconds(3600))
        for storage in storages {
            for key in ["forever", "created", "new"] {
                #expect(try await storage.lifetime(forKey: key) == .unlimited, "\(key) in \(type(of: storage))")
            }
            #expect(try await storage.value(forKey: "new") == Data("e".utf8))
            #expect(try await storage.value(forKey: "default") == nil)
        }
    }

    @Test func diskReportsWhatIsLeftAndAnUpdateKeepsIt() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        try disk.set(Data("token".utf8), forKey: "token", timeToLive: .seconds(10))
        try disk.set(Data("kept".utf8), forKey: "kept")

        clock.advance(by: .seconds(3))
        try disk.update(forKey: "token") { value in value?.append(contentsOf: Data("!".utf8)) }

        #expect(disk.lifetime(forKey: "token") == .remaining(.seconds(7)))
        #expect(disk.lifetime(forKey: "kept") == .unlimited)
        #expect(disk.lifetime(forKey: "missing") == nil)
        clock.advance(by: .seconds(7))
        #expect(disk.lifetime(forKey: "token") == nil)
    }

    /// A lifetime of zero or less has run out: the value is not stored and the older one goes, on
    /// memory and disk alike (and on SQLite and PostgreSQL, in their suites).
    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOldValue(lifetime: Duration) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let memory = MemoryStorage<String, Int>()
        let disk = try DiskStorage(url: folder.url)
        memory.set(1, forKey: "k")
        try disk.set(Data("old".utf8), forKey: "k")

        memory.set(2, forKey: "k", timeToLive: lifetime)
        try disk.set(Data("new".utf8), forKey: "k", timeToLive: lifetime)
        memory.set(3, forKey: "never", timeToLive: lifetime)

        #expect(memory.value(forKey: "k") == nil)
        #expect(memory.count == 0, "nothing expired was kept")
        #expect(try disk.value(forKey: "k") == nil)
        #expect(StoreFiles(of: folder.url).records.isEmpty)
    }

    @Test func setKeepingLifetimeKeepsWhatIsLeftOnMemoryAndDisk() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        let memory = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        var options = DiskStorage.Options(timeToLive: .seconds(60))
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        memory.set(1, forKey: "token", timeToLive: .seconds(10))
        try await disk.set(Data("1".utf8), forKey: "token", timeToLive: .seconds(10))
        clock.advance(by: .seconds(4))

        try await memory.setKeepingLifetime(2, forKey: "token")
        try await disk.setKeepingLifetime(Data("2".utf8), forKey: "token")
        try await memory.setKeepingLifetime(3, forKey: "new")

        #expect(memory.lifetime(forKey: "token") == .remaining(.seconds(6)))
        #expect(disk.lifetime(forKey: "token") == .remaining(.seconds(6)))
        #expect(memory.value(forKey: "token") == 2)
        #expect(try await disk.value(forKey: "token") == Data("2".utf8))
        #expect(memory.lifetime(forKey: "new") == .remaining(.seconds(60)), "nothing to keep: the default")
        clock.advance(by: .seconds(6))
        #expect(memory.value(forKey: "token") == nil)
        #expect(try await disk.value(forKey: "token") == nil)
    }
}
