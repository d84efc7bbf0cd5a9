import Foundation
import StrataTestSupport
import Testing

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
        let path = folder.path + "/" + relativePath(forKey: key)
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
}
