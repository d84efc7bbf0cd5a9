import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Keys that would be dangerous as paths: every file stays inside the store's folder whatever
/// the key, since files are named by the key's digest, and the key itself lives in the header.
@Suite(.onTestThreads) struct DiskStorageHostileKeyTests {
    static let hostileKeys: [String] = [
        "../x", "/etc/passwd", "a/b", "", ".", "..", "a\u{0}b", "../../../../../../../../tmp/escaped",
        String(repeating: "k", count: 64 * 1024), "🇺🇦👩‍👩‍👧‍👦", "caf\u{e9}", "cafe\u{301}", "\u{202e}txt.exe", "con",
    ]

    private static func value(_ key: String) -> Data {
        Data("value of \(key.prefix(32)) (\(key.utf8.count) bytes)".utf8)
    }

    /// A sandbox with the store in `store/` and bystanders beside it that must not change.
    private struct Sandbox {
        let folder: TemporaryFolder
        var store: URL { folder.child("store") }

        init() throws {
            folder = try TemporaryFolder()
            try Data("bystander".utf8).write(to: folder.url.appendingPathComponent("x"))
            try FileManager.default.createDirectory(at: folder.child("a"), withIntermediateDirectories: false)
            try Data("bystander".utf8).write(to: folder.child("a").appendingPathComponent("b"))
        }

        /// What lies outside the store: the sandbox's other files, and the system file a key names.
        struct Outside: Equatable {
            var sandbox: FolderListing
            var passwd: FileStatus?
            var passwdContents: Data?
        }

        func outside() -> Outside {
            Outside(
                sandbox: FolderListing(of: folder.url, excluding: ["store"]),
                passwd: FileStatus("/etc/passwd"),
                passwdContents: FileManager.default.contents(atPath: "/etc/passwd")
            )
        }

        /// Whether every file in the store is a regular file with a value file's name or the
        /// manifest, inside the store's real path.
        func everyFileIsAValueFileInside() -> Bool {
            let files = StoreFiles(of: store)
            let root = store.resolvingSymlinksInPath().path
            let listing = FolderListing(of: store)
            let noLinks = listing.items.keys.allSatisfy { path in
                let full = store.path + "/" + path
                let status = FileStatus(full)
                return (status?.isFolder ?? false) || (status?.isRegularFile ?? false)
            }
            let inside = files.records.allSatisfy {
                URL(fileURLWithPath: store.path + "/" + $0).resolvingSymlinksInPath().path.hasPrefix(root + "/")
            }
            return noLinks && inside && files.others.isEmpty && files.temporaries.isEmpty
        }
    }

    @Test(arguments: hostileKeys)
    func hostileKeyIsAnOrdinaryKeyInsideTheFolder(key: String) throws {
        let sandbox = try Sandbox()
        defer { sandbox.folder.remove() }
        let storage = try DiskStorage(url: sandbox.store)
        try storage.set(Data("ordinary".utf8), forKey: "ordinary")
        let before = sandbox.outside()

        try storage.set(Self.value(key), forKey: key)

        #expect(try storage.value(forKey: key) == Self.value(key))
        #expect(try storage.value(forKey: "ordinary") == Data("ordinary".utf8))
        #expect(Set(storage.keys()) == [key, "ordinary"])
        #expect(sandbox.everyFileIsAValueFileInside())
        #expect(StoreFiles(of: sandbox.store).records.count == 2)
        #expect(sandbox.outside() == before)
        try storage.removeValue(forKey: key)
        #expect(try storage.value(forKey: key) == nil)
        #expect(StoreFiles(of: sandbox.store).records == [relativePath(forKey: "ordinary")])
    }

    @Test func allHostileKeysTogetherEachReadTheirOwnValueAfterReopening() throws {
        let sandbox = try Sandbox()
        defer { sandbox.folder.remove() }
        let storage = try DiskStorage(url: sandbox.store)
        let before = sandbox.outside()
        // Keys Swift considers equal (the two spellings of "café") share an entry.
        var expected: [String: Data] = [:]

        for (index, key) in Self.hostileKeys.enumerated() {
            let value = Self.value(key) + Data([UInt8(index)])
            try storage.set(value, forKey: key)
            expected[key] = value
        }

        let reopened = try DiskStorage(url: sandbox.store)
        for (key, value) in expected {
            #expect(try storage.value(forKey: key) == value)
            #expect(try reopened.value(forKey: key) == value)
        }
        #expect(reopened.count == expected.count)
        #expect(Set(reopened.keys()) == Set(expected.keys))
        #expect(StoreFiles(of: sandbox.store).records.count == expected.count)
        #expect(sandbox.everyFileIsAValueFileInside())
        #expect(sandbox.outside() == before)
    }

    @Test func keyOverOneMebibyteIsRefusedAndNothingIsWritten() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let key = String(repeating: "k", count: (1 << 20) + 1)

        let errors = [
            #expect(throws: StorageError.self) { try storage.set(Data("1".utf8), forKey: key) },
            #expect(throws: StorageError.self) { try storage.value(forKey: key) },
            #expect(throws: StorageError.self) { try storage.removeValue(forKey: key) },
        ]

        for error in errors {
            #expect(error?.code == .invalidKey)
            #expect((error?.key?.count ?? .max) < 100)
        }
        #expect(StoreFiles(of: folder.url).records.isEmpty)
    }

    @Test func keyOfExactlyOneMebibyteIsStored() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let key = String(repeating: "k", count: 1 << 20)

        try storage.set(Data("1".utf8), forKey: key)

        #expect(try DiskStorage(url: folder.url).value(forKey: key) == Data("1".utf8))
    }
}
