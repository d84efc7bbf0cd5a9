import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Keys whose digests collide, forced with a weak injected digest: the key in each file's header
/// decides which file is whose, and collision chains (`digest`, `digest-1`, `digest-2`, …) stay
/// contiguous when a file leaves them.
@Suite(.onTestThreads) struct DiskStorageCollisionTests {
    private static let keys = ["k0", "k1", "k2", "k3"]
    private static let digest = String(repeating: "ab", count: 16)

    /// Options whose digest maps every key to the same 16 bytes.
    private static func collidingOptions(maximumCount: Int? = nil) -> DiskStorage.Options {
        var options = DiskStorage.Options(maximumCount: maximumCount)
        options.keyDigest = { _ in [UInt8](repeating: 0xab, count: 16) }
        return options
    }

    private static func value(_ key: String) -> Data { Data("value of \(key)".utf8) }

    private static func chain(_ count: Int) -> [String] {
        (0..<count).map { "ab/\(digest)" + ($0 == 0 ? "" : "-\($0)") }
    }

    @Test func collidingKeysEachReadTheirOwnValue() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.collidingOptions())

        for key in Self.keys {
            try storage.set(Self.value(key), forKey: key)
        }

        for key in Self.keys {
            #expect(try storage.value(forKey: key) == Self.value(key))
        }
        #expect(try storage.value(forKey: "k4") == nil)
        #expect(StoreFiles(of: folder.url).records.sorted() == Self.chain(4))
        #expect(Set(StoreFiles(of: folder.url).keys.values) == Set(Self.keys))
    }

    @Test func overwritingACollidingKeyReplacesItsOwnFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.collidingOptions())
        for key in Self.keys {
            try storage.set(Self.value(key), forKey: key)
        }

        try storage.set(Data("new".utf8), forKey: "k2")

        #expect(try storage.value(forKey: "k2") == Data("new".utf8))
        #expect(try storage.value(forKey: "k1") == Self.value("k1"))
        #expect(try storage.value(forKey: "k3") == Self.value("k3"))
        #expect(StoreFiles(of: folder.url).records.count == 4)
    }

    @Test func removingAKeyInTheMiddleOfAChainKeepsTheOthersReadable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.collidingOptions())
        for key in Self.keys {
            try storage.set(Self.value(key), forKey: key)
        }

        try storage.removeValue(forKey: "k1")

        #expect(try storage.value(forKey: "k1") == nil)
        for key in ["k0", "k2", "k3"] {
            #expect(try storage.value(forKey: key) == Self.value(key))
        }
        #expect(StoreFiles(of: folder.url).records.sorted() == Self.chain(3))
        #expect(storage.count == 3)
    }

    @Test func removingTheFirstKeyOfAChainKeepsTheOthersReadableAfterReopening() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.collidingOptions())
        for key in Self.keys {
            try storage.set(Self.value(key), forKey: key)
        }
        try storage.removeValue(forKey: "k0")

        let reopened = try DiskStorage(url: folder.url, options: Self.collidingOptions())

        #expect(Set(reopened.keys()) == ["k1", "k2", "k3"])
        for key in ["k1", "k2", "k3"] {
            #expect(try reopened.value(forKey: key) == Self.value(key))
        }
        try reopened.set(Self.value("k4"), forKey: "k4")
        #expect(try reopened.value(forKey: "k4") == Self.value("k4"))
        #expect(StoreFiles(of: folder.url).records.sorted() == Self.chain(4))
    }

    @Test func evictingAKeyOfAChainKeepsTheOthersReadable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.collidingOptions(maximumCount: 2))

        for key in ["k0", "k1", "k2"] {
            try storage.set(Self.value(key), forKey: key)
        }

        #expect(try storage.value(forKey: "k0") == nil)
        #expect(try storage.value(forKey: "k1") == Self.value("k1"))
        #expect(try storage.value(forKey: "k2") == Self.value("k2"))
        #expect(Set(storage.keys()) == ["k1", "k2"])
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["k1", "k2"])
    }

    @Test func expiringAKeyOfAChainKeepsTheOthersReadable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = Self.collidingOptions()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try storage.set(Self.value("k0"), forKey: "k0", timeToLive: .seconds(1))
        try storage.set(Self.value("k1"), forKey: "k1")
        try storage.set(Self.value("k2"), forKey: "k2", timeToLive: .seconds(1))
        try storage.set(Self.value("k3"), forKey: "k3")

        clock.advance(by: .seconds(2))
        let expired = try storage.removeExpired()

        #expect(expired == 2)
        #expect(try storage.value(forKey: "k1") == Self.value("k1"))
        #expect(try storage.value(forKey: "k3") == Self.value("k3"))
        #expect(StoreFiles(of: folder.url).records.sorted() == Self.chain(2))
    }
}
