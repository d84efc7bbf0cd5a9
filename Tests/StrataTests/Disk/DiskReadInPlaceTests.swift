import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// With `readsInPlace` (the default), the async `value(forKey:)` of a caller on no actor reads a value the page
/// cache holds on the caller's thread, with calls that cannot wait for the disk; everything else
/// goes to the I/O threads, which read the same value, find the same damage and expire the same
/// entries.
@Suite(.onTestThreads) struct DiskReadInPlaceTests {
    private static func options() -> DiskStorage.Options {
        var options = DiskStorage.Options()
        options.readsInPlace = true
        return options
    }

    /// Reads as a server's request handler would: from no actor.
    @concurrent
    private static func read(_ key: String, from storage: DiskStorage) async throws -> Data? {
        try await storage.value(forKey: key)
    }

    @concurrent
    @Test func aCachedValueIsReadOnTheCallersThreadWithItsHitCounted() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.options())
        try await storage.set(Data("odesa".utf8), forKey: "city")
        try await storage.set(Data(), forKey: "empty")
        let hits = storage.statistics.hits

        let city = try await readUntilInPlace(counting: storage.readsInPlace) {
            try await Self.read("city", from: storage)
        }
        let empty = try await readUntilInPlace(counting: storage.readsInPlace) {
            try await Self.read("empty", from: storage)
        }

        #expect(city.value == Data("odesa".utf8))
        #expect(empty.value == Data())
        #expect(storage.readsInPlace == inPlace(2))
        #expect(storage.statistics.hits == hits + UInt64(city.reads + empty.reads))
    }

    @MainActor
    @Test func aCallerOnTheMainActorIsNeverAnsweredOnItsThread() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.options())
        try await storage.set(Data("dnipro".utf8), forKey: "city")

        let value = try await storage.value(forKey: "city")

        #expect(value == Data("dnipro".utf8))
        #expect(storage.readsInPlace == 0)
    }

    @concurrent
    @Test(arguments: DiskStorageDamageTests.Damage.allCases)
    func aDamagedFileIsLeftToTheIOThreads(damage: DiskStorageDamageTests.Damage) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.options())
        try await storage.set(Data(repeating: 0x5a, count: 300), forKey: "k")
        let path = folder.path + "/" + relativePath(forKey: "k")
        try damage.apply(to: path)

        let value = try await Self.read("k", from: storage)

        #expect(value == nil)
        #expect(storage.readsInPlace == 0)
        #expect(storage.statistics.damagedFiles == 1)
        #expect(!FileManager.default.fileExists(atPath: path), "the cache dropped the damaged file")
    }

    /// tmpfs answers `RWF_NOWAIT` with `EOPNOTSUPP`: a storage there reads on the I/O threads,
    /// and a storage on another file system of the same process still reads in place. (That one
    /// refusal used to turn reads in place off for the whole process, for good.)
    @concurrent
    @Test(.enabled(if: TemporaryMount.isAvailable, "needs Linux and root to mount a tmpfs"))
    func aFileSystemThatCannotReadWithoutWaitingCostsNoOtherStorageItsReadsInPlace() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let mount = try TemporaryMount(byteCount: 1 << 20, in: folder.url)
        defer { mount.unmount() }
        let inMemory = try DiskStorage(url: mount.url.appendingPathComponent("cache"), options: Self.options())
        try await inMemory.set(Data("lviv".utf8), forKey: "city")
        #expect(try await Self.read("city", from: inMemory) == Data("lviv".utf8))
        #expect(inMemory.readsInPlace == 0)

        let onDisk = try DiskStorage(url: folder.child("cache"), options: Self.options())
        try await onDisk.set(Data("kharkiv".utf8), forKey: "city")
        let read = try await readUntilInPlace(counting: onDisk.readsInPlace) {
            try await Self.read("city", from: onDisk)
        }
        #expect(read.value == Data("kharkiv".utf8))
        #expect(onDisk.readsInPlace == inPlace(1))
    }

    @concurrent
    @Test func anExpiredValueIsLeftToTheIOThreads() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = Self.options()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try await storage.set(Data([1]), forKey: "token", timeToLive: .seconds(10))
        clock.advance(by: .seconds(11))

        let value = try await Self.read("token", from: storage)

        #expect(value == nil)
        #expect(storage.readsInPlace == 0)
        #expect(storage.count == 0, "the I/O threads removed the expired file")
    }

    @concurrent
    @Test func aValueLargerThan256KiBIsReadOnTheIOThreads() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: Self.options())
        let large = Data((0..<(300 * 1024)).map { UInt8(truncatingIfNeeded: $0) })
        try await storage.set(large, forKey: "large")

        let value = try await Self.read("large", from: storage)

        #expect(value == large)
        #expect(storage.readsInPlace == 0)
    }

    @concurrent
    @Test func aValueAnotherStorageWroteIsFoundOnTheIOThreadsThenReadInPlace() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let reader = try DiskStorage(url: folder.url, options: Self.options())
        let writer = try DiskStorage(url: folder.url, options: Self.options())
        try await writer.set(Data("kyiv".utf8), forKey: "city")

        let first = try await Self.read("city", from: reader)
        let readsInPlaceAfterFirst = reader.readsInPlace
        let second = try await readUntilInPlace(counting: reader.readsInPlace) {
            try await Self.read("city", from: reader)
        }

        #expect(first == Data("kyiv".utf8))
        #expect(readsInPlaceAfterFirst == 0, "the first read found the file on the I/O threads and indexed it")
        #expect(second.value == Data("kyiv".utf8))
        #expect(reader.readsInPlace == inPlace(1), "the first read indexed the file; a later one read it in place")
    }

    /// The in-place read expects the file the index knows, of the size it knows; a file another
    /// storage rewrote longer is read again with its status, still in place.
    @concurrent
    @Test func aKnownKeyRewrittenLongerElsewhereIsStillReadInPlace() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let reader = try DiskStorage(url: folder.url, options: Self.options())
        let writer = try DiskStorage(url: folder.url, options: Self.options())
        try await reader.set(Data("lviv".utf8), forKey: "city")
        let first = try await readUntilInPlace(counting: reader.readsInPlace) {
            try await Self.read("city", from: reader)
        }
        #expect(first.value == Data("lviv".utf8))
        #expect(reader.readsInPlace == inPlace(1))

        // Each attempt rewrites the file longer first, so the read that counts in place is one of
        // a file whose size the reader's index does not know.
        var rewrites = 0
        repeat {
            rewrites += 1
            let longer = Data(("ivano-frankivsk" + String(repeating: "!", count: rewrites)).utf8)
            try await writer.set(longer, forKey: "city")
            #expect(try await Self.read("city", from: reader) == longer)
        } while SystemCalls.platformReadsInPlace && reader.readsInPlace == 1 && rewrites < 50
        #expect(reader.readsInPlace == inPlace(2))
    }

    /// The default reads in place; with the option off, every read goes to the I/O threads.
    @concurrent
    @Test(arguments: [nil, false])
    func theOptionDecidesWhereAReadIsMade(readsInPlace: Bool?) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options()
        if let readsInPlace { options.readsInPlace = readsInPlace }
        let storage = try DiskStorage(url: folder.url, options: options)
        try await storage.set(Data("poltava".utf8), forKey: "city")

        let read = try await readUntilInPlace(counting: storage.readsInPlace, limit: 20) {
            try await Self.read("city", from: storage)
        }

        #expect(read.value == Data("poltava".utf8))
        #expect(storage.readsInPlace == inPlace(readsInPlace == false ? 0 : 1))
        if readsInPlace == false { #expect(read.reads == (SystemCalls.platformReadsInPlace ? 20 : 1)) }
    }

    @concurrent
    @Test func aValueReplacedByAnotherStorageIsReadAsItIsNow() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let reader = try DiskStorage(url: folder.url, options: Self.options())
        let writer = try DiskStorage(url: folder.url, options: Self.options())
        try await reader.set(Data("old".utf8), forKey: "k")
        try await writer.set(Data("new".utf8), forKey: "k")

        let value = try await Self.read("k", from: reader)

        #expect(value == Data("new".utf8))
    }
}
