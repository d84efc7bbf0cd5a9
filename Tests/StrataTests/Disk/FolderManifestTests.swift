import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// The rules every folder Strata keeps opens by (``FolderManifest``), checked on a kind of
/// folder of the tests' own and on a ``DiskStorage``'s; `ObjectFolderTests` checks the object
/// folder's.
@Suite(.onTestThreads) struct FolderManifestTests {
    private static let kind = FolderManifest.Kind(
        fileName: "test-manifest.json",
        format: "test.format",
        newestVersion: 3,
        storage: "TestFolder"
    )
    private static let manifest = FolderManifest(format: "test.format", version: 3, layout: "plain")

    private static func open(
        _ folder: TemporaryFolder,
        ownsEntry: (String) -> Bool = { _ in false },
        check: (FolderManifest) throws(FolderManifestError) -> Void = { _ in }
    ) throws(StorageError) -> FolderManifest {
        try kind.open(
            root: folder.path,
            permissions: (0o600, 0o700),
            durable: false,
            ownsEntry: ownsEntry,
            check: check,
            create: { manifest }
        )
    }

    private static func write(_ text: String, to name: String, in folder: TemporaryFolder) throws {
        try Data(text.utf8).write(to: folder.url.appendingPathComponent(name))
    }

    @Test func aNewFolderGetsItsManifestAndOpensAgainWithIt() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try FileManager.default.removeItem(at: folder.url)

        #expect(try Self.open(folder) == Self.manifest, "the root is made, then the manifest")
        let written = try Data(contentsOf: folder.url.appendingPathComponent(Self.kind.fileName))
        #expect(try Self.kind.decode(written) == Self.manifest)
        #expect(try Self.open(folder) == Self.manifest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [Self.kind.fileName])
    }

    @Test(arguments: [
        ("{ not json", StorageError.Code.corrupted, "damaged"),
        (#"{"format": "test.format", "version": 1}"#, .corrupted, "damaged"),
        (#"{"format": "test.format", "version": 0, "layout": "plain"}"#, .corrupted, "damaged"),
        (#"{"format": "other", "version": 1, "layout": "plain"}"#, .invalidConfiguration, "format 'other'"),
        (#"{"version": 1}"#, .invalidConfiguration, "format 'none'"),
        (#"{"format": "test.format", "version": 4, "layout": "plain"}"#, .unsupported, "version 4"),
    ])
    func aManifestThisBuildCannotOpenIsRefusedWithItsCodeAndNothingChanges(
        text: String,
        code: StorageError.Code,
        message: String
    ) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write(text, to: Self.kind.fileName, in: folder)
        let before = FolderListing(of: folder.url)

        let error = #expect(throws: StorageError.self) { try Self.open(folder) }

        #expect(error?.code == code)
        #expect(error?.storage == "TestFolder")
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(Self.kind.fileName) == true)
        #expect(FolderListing(of: folder.url) == before)
    }

    @Test func theKindsOwnCheckRefusesWhatItDoesNotRead() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write(
            #"{"format": "test.format", "version": 2, "layout": "zigzag"}"#,
            to: Self.kind.fileName,
            in: folder
        )

        let error = #expect(throws: StorageError.self) {
            try Self.open(
                folder,
                check: { manifest throws(FolderManifestError) in
                    guard manifest.layout == "plain" else { throw .unsupported("layout '\(manifest.layout)'") }
                }
            )
        }

        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("layout 'zigzag'") == true)
    }

    @Test func aFolderWithoutAManifestIsTakenOnlyWhenItHoldsNothingButWhatStrataLeaves() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // Finder's file, one of the kind's own folders, a dead writer's temporary manifest.
        try Self.write("", to: ".DS_Store", in: folder)
        try FileManager.default.createDirectory(at: folder.child("own"), withIntermediateDirectories: false)
        try Self.write("{", to: ".tmp-manifest-2147483646", in: folder)

        #expect(try Self.open(folder, ownsEntry: { $0 == "own" }) == Self.manifest)
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(names == [".DS_Store", "own", Self.kind.fileName], "the dead writer's file is gone")

        let other = try TemporaryFolder()
        defer { other.remove() }
        try Self.write("", to: ".hidden", in: other)
        try FileManager.default.createDirectory(at: other.child("own"), withIntermediateDirectories: false)
        let before = FolderListing(of: other.url)
        let error = #expect(throws: StorageError.self) { try Self.open(other, ownsEntry: { $0 == "own" }) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("1 entries but no test-manifest.json") == true)
        #expect(FolderListing(of: other.url) == before)
    }

    @Test func aDiskFolderWithADamagedManifestIsReportedAsDamagedAndLeftAsItWas() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try DiskStorage(url: folder.url).set(Data("kept".utf8), forKey: "key")
        try Self.write(#"{"format": "strata.disk", "vers"#, to: DiskStorage.manifestName, in: folder)
        let before = FolderListing(of: folder.url)

        let error = #expect(throws: StorageError.self) { try DiskStorage(url: folder.url) }

        #expect(error?.code == .corrupted)
        #expect(error?.storage == "DiskStorage")
        #expect(error?.message.contains(DiskStorage.manifestName) == true)
        #expect(FolderListing(of: folder.url) == before)
    }

    @Test func aNewDiskFolderWhereFinderLeftItsFileOpens() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write("", to: ".DS_Store", in: folder)

        let storage = try DiskStorage(url: folder.url)
        try storage.set(Data("value".utf8), forKey: "key")

        #expect(try storage.value(forKey: "key") == Data("value".utf8))
        #expect(
            try DiskManifest.decode(Data(contentsOf: folder.url.appendingPathComponent(DiskStorage.manifestName)))
                == DiskManifest.current
        )
    }
}
