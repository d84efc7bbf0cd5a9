import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Files of format version 1 (payloads checked with xxHash64), as every earlier build wrote them,
/// still read after the payload checksum moved to CRC-32C in version 2; damage in them is still
/// found; and new files are written in version 2.
@Suite(.onTestThreads) struct DiskFormatVersionTests {
    private static let value = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// Writes a record of format `version` for `key` where the storage looks for it, with the
    /// payload checksum that version uses unless `checksum` says otherwise.
    private static func plant(
        _ value: Data,
        forKey key: String,
        version: UInt16,
        checksum: UInt64? = nil,
        nested: Bool = false,
        in folder: TemporaryFolder
    ) throws -> String {
        let header = DiskRecordHeader(
            key: key,
            payloadLength: value.count,
            created: Date().timeIntervalSince1970,
            expiry: .infinity,
            payloadChecksum: checksum
                ?? value.withUnsafeBytes { DiskRecordHeader.checksum(ofPayload: $0, version: version) },
            version: version
        )
        let path = folder.path + "/" + relativePath(forKey: key, nested: nested)
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try (Data(header.encoded()) + value).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(arguments: [DiskStorage.Mode.store, .cache])
    func aFileOfVersionOneReadsWhenOpenedAndWhenFoundLater(mode: DiskStorage.Mode) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        _ = try Self.plant(Self.value, forKey: "before", version: 1, in: folder)
        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        _ = try Self.plant(Self.value, forKey: "after", version: 1, in: folder)

        #expect(try reopened.value(forKey: "before") == Self.value)
        #expect(try reopened.value(forKey: "after") == Self.value)
        #expect(try storage.value(forKey: "before") == Self.value)
        #expect(try reopened.verify().isSound)
    }

    @Test func aVersionOneChecksumIsXXHash64OfThePayload() throws {
        let expected = XXHash64.hash(Self.value)

        let checksum = Self.value.withUnsafeBytes { DiskRecordHeader.checksum(ofPayload: $0, version: 1) }

        #expect(checksum == expected)
        #expect(checksum != Self.value.withUnsafeBytes { DiskRecordHeader.checksum(ofPayload: $0, version: 2) })
    }

    @Test func newFilesAreVersionTwoWithACRC32COfThePayload() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.value, forKey: "k")

        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "k")))
        let header = try bytes.withUnsafeBytes { buffer in try DiskRecordHeader.decode(buffer) }

        #expect(header.version == 2)
        #expect(header.payloadChecksum == UInt64(Self.value.withUnsafeBytes { CRC32C.checksum($0) }))
    }

    /// A damaged payload of version 1, and a version-1 header whose checksum is of the other kind:
    /// a cache reads a miss and drops the file, a store throws `corrupted` and keeps it.
    @Test(arguments: [DiskStorage.Mode.store, .cache], [false, true])
    func damageInAVersionOneFileIsFound(mode: DiskStorage.Mode, wrongKindOfChecksum: Bool) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        let crc = UInt64(Self.value.withUnsafeBytes { CRC32C.checksum($0) })
        let path = try Self.plant(
            Self.value,
            forKey: "k",
            version: 1,
            checksum: wrongKindOfChecksum ? crc : nil,
            in: folder
        )
        if !wrongKindOfChecksum {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[bytes.count - 10] ^= 0x40
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }

        switch mode {
        case .cache:
            #expect(try storage.value(forKey: "k") == nil)
            #expect(!FileManager.default.fileExists(atPath: path))
        case .store:
            let error = #expect(throws: StorageError.self) { try storage.value(forKey: "k") }
            #expect(error?.code == .corrupted)
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func overwritingAVersionOneFileWritesVersionTwo() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try DiskStorage(url: folder.url)
        let path = try Self.plant(Self.value, forKey: "k", version: 1, in: folder)
        let storage = try DiskStorage(url: folder.url)

        try storage.set(Data("new".utf8), forKey: "k")

        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes[4] == 2)
        #expect(try storage.value(forKey: "k") == Data("new".utf8))
    }

    // MARK: Layouts

    /// A folder made before manifest version 2: `d/ig/<digest>`, its manifest version 1.
    private static func nestedFolder(_ folder: TemporaryFolder) throws {
        let manifest = #"{"format": "strata.disk", "layout": "sha256-128/16x256", "version": 1}"#
        try Data(manifest.utf8).write(to: folder.url.appendingPathComponent(DiskStorage.manifestName))
    }

    @Test(arguments: [DiskStorage.Mode.store, .cache])
    func aFolderOfTheNestedLayoutKeepsItsLayout(mode: DiskStorage.Mode) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.nestedFolder(folder)
        _ = try Self.plant(Self.value, forKey: "old", version: 1, nested: true, in: folder)
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))

        try storage.set(Data("new".utf8), forKey: "new")
        try storage.removeValue(forKey: "gone")

        #expect(try storage.value(forKey: "old") == Self.value)
        #expect(
            StoreFiles(of: folder.url).records.sorted()
                == [relativePath(forKey: "new", nested: true), relativePath(forKey: "old", nested: true)].sorted()
        )
        let reopened = try DiskStorage(url: folder.url, options: DiskStorage.Options(mode: mode))
        #expect(Set(reopened.keys()) == ["old", "new"])
        #expect(try reopened.value(forKey: "new") == Data("new".utf8))
        #expect(try reopened.verify().checkedFiles == 2)
        let manifest = try #require(FileManager.default.contents(atPath: folder.path + "/" + DiskStorage.manifestName))
        #expect(try DiskManifest.decode(manifest).version == 1, "the manifest is left as it was")
    }

    @Test func aNestedFolderRemovedBehindTheStoragesBackIsMadeAgainNested() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.nestedFolder(folder)
        let storage = try DiskStorage(url: folder.url)
        try FileManager.default.removeItem(at: folder.url)

        try storage.set(Self.value, forKey: "k")

        let manifest = try #require(FileManager.default.contents(atPath: folder.path + "/" + DiskStorage.manifestName))
        #expect(try DiskManifest.decode(manifest).version == 1)
        #expect(StoreFiles(of: folder.url).records == [relativePath(forKey: "k", nested: true)])
    }

    @Test func aManifestOfVersionTwoNamingAnotherLayoutIsRefusedAndNothingChanges() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let manifest = #"{"format": "strata.disk", "layout": "sha256-128/16x256", "version": 2}"#
        try Data(manifest.utf8).write(to: folder.url.appendingPathComponent(DiskStorage.manifestName))
        let before = FolderListing(of: folder.url)

        let error = #expect(throws: StorageError.self) { try DiskStorage(url: folder.url) }

        #expect(error?.code == .unsupported, "a layout this build does not know, as an object folder's")
        #expect(error?.message.contains("layout 'sha256-128/16x256'") == true)
        #expect(FolderListing(of: folder.url) == before)
    }

    /// A first open killed after making the value folders but before renaming its manifest leaves
    /// a folder that opens as new, not one refused as someone else's.
    @Test func aFolderHoldingOnlyValueFoldersAndATemporaryManifestOpensAsNew() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        for name in ["00", "7f", "ff"] {
            try FileManager.default.createDirectory(
                at: folder.url.appendingPathComponent(name),
                withIntermediateDirectories: false
            )
        }

        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.value, forKey: "k")

        #expect(try storage.value(forKey: "k") == Self.value)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/" + DiskStorage.manifestName))
    }
}
