import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Files damaged behind the storage's back: a cache drops them and reads a miss, a store reports
/// them and keeps them, `verify()` lists them, and nothing crashes.
@Suite(.onTestThreads) struct DiskStorageDamageTests {
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, flippedPayloadByte, flippedHeaderByte, flippedKeyByte, garbage, otherMagic, empty
        case trailingBytes, hugePayloadLength

        var testDescription: String { rawValue }

        /// Damages the record file at `path`.
        func apply(to path: String) throws {
            let url = URL(fileURLWithPath: path)
            var bytes = try [UInt8](Data(contentsOf: url))
            switch self {
            case .truncated:
                bytes.removeLast(bytes.count / 3)
            case .flippedPayloadByte:
                bytes[bytes.count - 1] ^= 0x01
            case .flippedHeaderByte:
                bytes[20] ^= 0x80  // inside the payload length
            case .flippedKeyByte:
                bytes[DiskRecordHeader.fixedSize] ^= 0x01
            case .garbage:
                var generator = SeededRandomNumberGenerator(seed: 7)
                bytes = (0..<bytes.count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case .otherMagic:
                bytes.replaceSubrange(0..<4, with: Array("PK\u{3}\u{4}".utf8))
            case .empty:
                bytes = []
            case .trailingBytes:
                bytes += [0, 0, 0]
            case .hugePayloadLength:
                // A header with a sound checksum that claims an impossible payload length.
                let header = DiskRecordHeader(
                    key: "k",
                    payloadLength: Int.max - DiskRecordHeader.fixedSize - 1,
                    created: 0,
                    expiry: .infinity,
                    payloadChecksum: 0
                )
                bytes = header.encoded() + bytes[header.size...]
            }
            try Data(bytes).write(to: url)
        }
    }

    private static let value = Data(repeating: 0x5a, count: 300)

    /// A storage holding `k` (and an undamaged `other`) whose file for `k` is then damaged.
    private static func damagedStorage(
        _ damage: Damage,
        mode: DiskStorage.Mode,
        in folder: TemporaryFolder
    ) throws -> (DiskStorage, path: String) {
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        try storage.set(value, forKey: "k")
        try storage.set(value, forKey: "other")
        let path = folder.path + "/" + relativePath(forKey: "k")
        try damage.apply(to: path)
        return (storage, path)
    }

    @Test(arguments: [DiskStorage.Mode.store, .cache])
    func aDirectoryWhereARecordShouldBeIsDamageNotAFolderThatCannotOpen(mode: DiskStorage.Mode) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        try storage.set(Self.value, forKey: "k")
        try storage.set(Self.value, forKey: "other")
        let path = folder.path + "/" + relativePath(forKey: "k")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)

        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        let report = try reopened.verify()

        #expect(try reopened.value(forKey: "other") == Self.value)
        #expect(reopened.statistics.damagedFiles == 1)
        #expect(reopened.entries().map(\.key) == ["other"])
        #expect(report.checkedFiles == 2)
        #expect(report.damagedFiles.map(\.path) == [path])
        #expect(report.damagedFiles.first?.reason.contains("a directory") == true)
        #expect(FileManager.default.fileExists(atPath: path), "left for a person to look at")
    }

    @Test(arguments: Damage.allCases)
    func removingTheKeyOfADamagedFileInAStoreRemovesTheFile(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (_, path) = try Self.damagedStorage(damage, mode: .store, in: folder)
        // Reopened, so the damaged file is not in the index: only the folder knows it.
        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: .store))
        #expect(throws: StorageError.self) { try reopened.value(forKey: "k") }

        try reopened.removeValue(forKey: "k")

        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try reopened.value(forKey: "k") == nil)
        #expect(try reopened.value(forKey: "other") == Self.value)
    }

    @Test func verifyChangesNothingNotEvenADeadWritersTemporaryFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.value, forKey: "k")
        let record = URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "k"))
        let leftover = record.deletingLastPathComponent().appendingPathComponent(".tmp-2147483646-1").path
        try Self.value.write(to: URL(fileURLWithPath: leftover))
        let before = FolderListing(of: folder.url)

        _ = try storage.verify()

        #expect(FolderListing(of: folder.url) == before)
        #expect(FileManager.default.fileExists(atPath: leftover))
    }

    @Test(arguments: Damage.allCases)
    func cacheReadsADamagedFileAsAMissAndRemovesIt(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (storage, path) = try Self.damagedStorage(damage, mode: .cache, in: folder)

        let value = try storage.value(forKey: "k")

        #expect(value == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(storage.statistics.damagedFiles == 1)
        #expect(storage.keys() == ["other"])
        #expect(storage.totalSize == StoreFiles(of: folder.url).totalSize)
        #expect(try storage.value(forKey: "other") == Self.value)
        try storage.set(Self.value, forKey: "k")
        #expect(try storage.value(forKey: "k") == Self.value)
    }

    @Test(arguments: Damage.allCases)
    func storeThrowsCorruptedNamingTheKeyAndFileAndKeepsIt(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (storage, path) = try Self.damagedStorage(damage, mode: .store, in: folder)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))

        let error = #expect(throws: StorageError.self) { try storage.value(forKey: "k") }

        #expect(error?.code == .corrupted)
        #expect(error?.key == "k")
        #expect(error?.message.contains(path) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged)
        #expect(try storage.value(forKey: "other") == Self.value)
    }

    @Test(arguments: Damage.allCases)
    func verifyListsTheDamagedFile(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (storage, path) = try Self.damagedStorage(damage, mode: .cache, in: folder)
        let before = FolderListing(of: folder.url)

        let report = try storage.verify()

        #expect(!report.isSound)
        #expect(report.checkedFiles == 2)
        #expect(report.damagedFiles.map(\.path) == [path])
        #expect(FolderListing(of: folder.url) == before)
    }

    @Test(arguments: Damage.allCases)
    func reopenedCacheDropsAndCountsADamagedFile(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.damagedStorage(damage, mode: .cache, in: folder)

        // Opening checks headers and lengths; the payload's checksum is checked when it is read.
        let reopened = try DiskStorage(url: folder.url)
        let value = try reopened.value(forKey: "k")

        #expect(value == nil)
        #expect(reopened.keys() == ["other"])
        #expect(reopened.statistics.damagedFiles == 1)
        #expect(StoreFiles(of: folder.url).records == [relativePath(forKey: "other")])
        #expect(reopened.totalSize == StoreFiles(of: folder.url).totalSize)
        #expect(try reopened.value(forKey: "other") == Self.value)
    }

    @Test(arguments: Damage.allCases)
    func reopenedStoreKeepsADamagedFileAndReadingItThrows(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.damagedStorage(damage, mode: .store, in: folder)
        let before = FolderListing(of: folder.url)

        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: .store))
        let error = #expect(throws: StorageError.self) { try reopened.value(forKey: "k") }

        #expect(error?.code == .corrupted)
        #expect(FolderListing(of: folder.url) == before)
        #expect(try reopened.value(forKey: "other") == Self.value)
    }

    @Test func openingACacheLeavesAFileOfANewerFormatAlone() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.value, forKey: "k")
        let path = folder.path + "/" + relativePath(forKey: "k")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[4] = 3  // format version 3
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let reopened = try DiskStorage(url: folder.url)

        #expect(reopened.keys().isEmpty)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func strayFileWithARecordNameIsDroppedByACacheWhenRead() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let path = folder.path + "/" + relativePath(forKey: "k")
        try FileManager.default.createDirectory(
            atPath: String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]),
            withIntermediateDirectories: true
        )
        try Data("#!/bin/sh\necho another program\n".utf8).write(to: URL(fileURLWithPath: path))

        let value = try storage.value(forKey: "k")

        #expect(value == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(storage.statistics.damagedFiles == 1)
    }
}
