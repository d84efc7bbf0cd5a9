import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `lifetime(forKey:)` says how long a value has left, without counting a use.
@Suite(.onTestThreads) struct LifetimeTests {
    @Test func memoryReportsWhatIsLeftUnlimitedOrNothing() throws {
        let clock = ManualClock()
        let cache = try MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
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
}
