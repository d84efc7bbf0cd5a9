import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The index snapshot: opening from it reads no file when nothing changed, finds what changed
/// since (another process's writes included), and falls back to reading every file when the
/// snapshot is missing, damaged, foreign or lies; never a wrong value.
@Suite(.onTestThreads) struct DiskIndexSnapshotTests {
    private static func value(_ index: Int) -> Data {
        Data("value \(index) ".utf8) + Data(repeating: UInt8(truncatingIfNeeded: index), count: index % 300)
    }

    /// A storage of `count` values (every seventh expiring in an hour), its folders aged and its
    /// snapshot saved.
    private static func savedFolder(_ folder: TemporaryFolder, count: Int = 60) throws -> DiskStorage {
        let storage = try DiskStorage(url: folder.url)
        for index in 0..<count {
            try storage.set(value(index), forKey: "key-\(index)", timeToLive: index % 7 == 0 ? .seconds(3600) : nil)
        }
        try folder.ageValueFolders()
        try storage.saveIndex()
        return storage
    }

    /// What an index holds, comparable: key, size and whether it expires.
    private static func summary(_ storage: DiskStorage) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: storage.entries().map {
                ($0.key, "\($0.size) \($0.expiry == nil ? "never" : "expires")")
            }
        )
    }

    private static func scanned(_ folder: TemporaryFolder) throws -> DiskStorage {
        var options = DiskStorage.Options()
        options.savesIndexSnapshots = false
        return try DiskStorage(url: folder.url, options: options)
    }

    @Test func openingFromAValidSnapshotReadsNoFileAndBuildsTheSameIndex() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read == 0)
        #expect(opened.openedFolders.fromSnapshot == 256)
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
        #expect(opened.totalSize == StoreFiles(of: folder.url).totalSize)
        for index in 0..<60 {
            #expect(try opened.value(forKey: "key-\(index)") == Self.value(index))
        }
    }

    @Test func filesChangedSinceTheSnapshotByAnotherWriterAreFound() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        // Another process's storage, which knows nothing of the snapshot.
        let other = try Self.scanned(folder)
        try other.set(Data("new".utf8), forKey: "added")
        try other.set(Data("rewritten".utf8), forKey: "key-3")
        try other.removeValue(forKey: "key-4")

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read >= 1)
        #expect(opened.openedFolders.read <= 3)
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
        #expect(try opened.value(forKey: "added") == Data("new".utf8))
        #expect(try opened.value(forKey: "key-3") == Data("rewritten".utf8))
        #expect(try opened.value(forKey: "key-4") == nil)
        #expect(opened.count == 60)
    }

    /// A snapshot from an earlier run, after which the storage changed values without saving
    /// again: the changed folders are read, the others trusted.
    @Test func aSnapshotFromAnEarlierRunIsTrustedOnlyWhereNothingChanged() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try Self.savedFolder(folder)
        for index in 0..<5 {
            try storage.set(Data("later \(index)".utf8), forKey: "key-\(index)")
        }

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read >= 1)
        #expect(opened.openedFolders.fromSnapshot >= 256 - 5)
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
        for index in 0..<5 {
            #expect(try opened.value(forKey: "key-\(index)") == Data("later \(index)".utf8))
        }
    }

    /// A folder changed within a second of the save may keep its time through a later change
    /// (the clock's tick), so it is read however well it matches.
    @Test func aFolderChangedJustBeforeTheSaveIsReadAgain() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.value(1), forKey: "recent")
        try storage.saveIndex()

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read >= 1)
        #expect(try opened.value(forKey: "recent") == Self.value(1))
    }

    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, flippedByte, empty, garbage, otherMagic, newerVersion

        var testDescription: String { rawValue }

        func apply(to path: String) throws {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            switch self {
            case .truncated: bytes.removeLast(bytes.count / 2)
            case .flippedByte: bytes[bytes.count / 2] ^= 0x10
            case .empty: bytes = []
            case .garbage: bytes = (0..<bytes.count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
            case .otherMagic: bytes.replaceSubrange(0..<4, with: Array("JUNK".utf8))
            case .newerVersion: bytes[4] = 9
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
    }

    @Test(arguments: Damage.allCases)
    func aDamagedSnapshotFallsBackToReadingEveryFile(damage: Damage) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        try damage.apply(to: folder.path + "/" + DiskIndexSnapshot.fileName)

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders == (0, 256), "no folder came from the snapshot")
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
        #expect(try opened.value(forKey: "key-10") == Self.value(10))
    }

    /// A snapshot rewritten with a valid checksum that names a file which is gone, and leaves
    /// out one that is there: the listing check reads those folders again.
    @Test func aSnapshotThatListsFilesThatAreNotThereIsNotTrusted() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        let path = folder.path + "/" + DiskIndexSnapshot.fileName
        var snapshot = try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes {
            try DiskIndexSnapshot.decode($0)
        }
        let numbers = snapshot.folders.keys.filter { !(snapshot.folders[$0]?.files.isEmpty ?? true) }.sorted()
        let lied = try #require(numbers.first)
        let dropped = try #require(numbers.last)
        snapshot.folders[lied]?.files.append(
            .init(
                name: String(repeating: "0", count: 32),
                inode: 1,
                value: .init(key: "ghost", size: 10, touched: 0, expiry: .infinity)
            )
        )
        snapshot.folders[dropped]?.files.removeFirst()
        try Data(snapshot.encoded()).write(to: URL(fileURLWithPath: path))

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read == 2)
        #expect(!opened.keys().contains("ghost"))
        #expect(try opened.value(forKey: "ghost") == nil)
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
    }

    /// A process killed while writing its snapshot leaves a temporary file and the older
    /// snapshot: the older one is used and the leftover removed.
    @Test func aCrashWhileWritingTheSnapshotLeavesTheOlderOneInUse() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        // The name a writer that no longer runs (PID 2147483646) would have used.
        let leftover = folder.path + "/" + TemporaryFiles.prefix + "index-2147483646-1"
        try Data("half a snapsh".utf8).write(to: URL(fileURLWithPath: leftover))

        let opened = try DiskStorage(url: folder.url)

        #expect(opened.openedFolders.read == 0)
        #expect(opened.count == 60)
        #expect(!FileManager.default.fileExists(atPath: leftover))
    }

    /// One value folder replaced by a file: opening from the snapshot skips it, as reading every
    /// file does, and every other value reads.
    @Test func aValueFolderThatIsAFileIsSkipped() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        let shard = String(relativePath(forKey: "key-5").prefix(2))
        try FileManager.default.removeItem(atPath: folder.path + "/" + shard)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: folder.path + "/" + shard))

        let opened = try DiskStorage(url: folder.url)

        #expect(try opened.value(forKey: "key-5") == nil)
        #expect(Self.summary(opened) == Self.summary(try Self.scanned(folder)))
        for index in 0..<60 where !relativePath(forKey: "key-\(index)").hasPrefix(shard) {
            #expect(try opened.value(forKey: "key-\(index)") == Self.value(index))
        }
    }

    @Test func theAsyncSaveWritesTheSameSnapshot() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try Self.savedFolder(folder)
        let path = folder.path + "/" + DiskIndexSnapshot.fileName
        func decoded() throws -> DiskIndexSnapshot {
            try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes { try DiskIndexSnapshot.decode($0) }
        }
        let saved = try decoded()
        try FileManager.default.removeItem(atPath: path)

        try await storage.saveIndex()

        #expect(try decoded().folders == saved.folders)
    }

    /// Saves asked for at once, from two storages on one folder and while a storage saves on its
    /// own, take turns instead of tripping over one another's temporary file.
    @Test func savesAtTheSameTimeAllSucceed() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try Self.savedFolder(folder, count: 1_000)
        let other = try DiskStorage(url: folder.url)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<8 {
                group.addTask { try await (round.isMultiple(of: 2) ? storage : other).saveIndex() }
            }
            try await group.waitForAll()
        }

        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + DiskIndexSnapshot.fileName))
        #expect(throws: Never.self) { try bytes.withUnsafeBytes { try DiskIndexSnapshot.decode($0) } }
        #expect(StoreFiles(of: folder.url).temporaries.isEmpty)
    }

    /// A folder where the snapshot file should be: saving throws `io` naming the snapshot and
    /// leaves no temporary file, opening reads every file instead, and no value is lost.
    @Test func aFolderInPlaceOfTheSnapshotIsAnIOErrorToSaveAndIgnoredWhenOpening() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try Self.savedFolder(folder)
        let path = folder.path + "/" + DiskIndexSnapshot.fileName
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)

        let error = #expect(throws: StorageError.self) { try storage.saveIndex() }
        let opened = try DiskStorage(url: folder.url)

        #expect(error?.code == .io)
        #expect(error?.message.contains("index snapshot") == true)
        #expect(StoreFiles(of: folder.url).temporaries.isEmpty)
        #expect(opened.openedFolders == (0, 256))
        #expect(opened.count == 60)
        for index in 0..<60 {
            #expect(try opened.value(forKey: "key-\(index)") == Self.value(index))
        }
    }

    @Test func expiredValuesInATrustedSnapshotAreDroppedWithTheirFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try storage.set(Self.value(1), forKey: "short", timeToLive: .seconds(5))
        try storage.set(Self.value(2), forKey: "long")
        try folder.ageValueFolders()
        try storage.saveIndex()
        clock.advance(by: .seconds(10))

        let opened = try DiskStorage(url: folder.url, options: options)

        #expect(opened.openedFolders.read == 0)
        #expect(opened.keys() == ["long"])
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/" + relativePath(forKey: "short")))
    }

    @Test func withSnapshotsOffNothingIsSavedOrRead() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder)
        func write(_ storage: DiskStorage) throws {
            for index in 0..<1_200 {
                try storage.set(Self.value(index), forKey: "more-\(index)")
            }
        }

        let before = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + DiskIndexSnapshot.fileName))
        let opened = try Self.scanned(folder)
        try write(opened)
        try await Task.sleep(for: .milliseconds(300))

        #expect(opened.openedFolders == (0, 256))
        let after = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + DiskIndexSnapshot.fileName))
        #expect(before == after)
    }

    /// A thousand changes save a snapshot on Strata's I/O threads, without being asked.
    @Test func aThousandChangesSaveASnapshotOnTheirOwn() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        func fill() throws -> DiskStorage {
            let storage = try DiskStorage(url: folder.url)
            for index in 0..<1_000 {
                try storage.set(Self.value(index), forKey: "key-\(index)")
            }
            return storage
        }
        let storage = try fill()
        let path = folder.path + "/" + DiskIndexSnapshot.fileName

        var waited = 0
        while !FileManager.default.fileExists(atPath: path), waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }

        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let snapshot = try bytes.withUnsafeBytes { try DiskIndexSnapshot.decode($0) }
        let values = snapshot.folders.values.reduce(0) { $0 + $1.files.filter { $0.value != nil }.count }
        #expect(values == 1_000)
        #expect(storage.count == 1_000)
    }

    /// A large folder opened without a snapshot saves one for the next open, on Strata's I/O
    /// threads.
    @Test func openingALargeFolderWithoutASnapshotSavesOne() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        func fill() throws {
            let storage = try Self.scanned(folder)
            for index in 0..<1_000 {
                try storage.set(Self.value(index), forKey: "key-\(index)")
            }
        }
        try fill()
        let path = folder.path + "/" + DiskIndexSnapshot.fileName
        #expect(!FileManager.default.fileExists(atPath: path))

        let opened = try DiskStorage(url: folder.url)
        var waited = 0
        while !FileManager.default.fileExists(atPath: path), waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }

        #expect(opened.openedFolders == (0, 256))
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes {
            try DiskIndexSnapshot.decode($0)
        }
        #expect(snapshot.folders.values.reduce(0) { $0 + $1.files.count } == 1_000)
    }

    /// Every prefix of a valid snapshot, and every single-byte change of its first kilobyte,
    /// decodes or throws; none crashes.
    @Test func everyTruncationAndByteFlipOfASnapshotThrowsOrDecodes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        _ = try Self.savedFolder(folder, count: 20)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + DiskIndexSnapshot.fileName)))
        var decoded = 0
        for length in 0..<bytes.count {
            if (try? bytes.prefix(length).withUnsafeBytes { try DiskIndexSnapshot.decode($0) }) != nil { decoded += 1 }
        }
        for position in 0..<min(bytes.count, 1_024) {
            var flipped = bytes
            flipped[position] ^= 0x5A
            if (try? flipped.withUnsafeBytes { try DiskIndexSnapshot.decode($0) }) != nil { decoded += 1 }
        }

        #expect(decoded == 0, "a checksum over the whole snapshot catches every one")
        #expect(try bytes.withUnsafeBytes { try DiskIndexSnapshot.decode($0) }.folders.isEmpty == false)
    }
}
