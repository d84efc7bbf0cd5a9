import Foundation
import StrataTestSupport
import StrataTesting
import Testing

@testable import Strata

@Suite(.onTestThreads) struct DiskStorageTests {
    private static func data(_ text: String) -> Data { Data(text.utf8) }

    // MARK: The behavioural suite

    private static func behaviourSuite(
        mode: DiskStorage.Mode,
        in folder: TemporaryFolder
    ) -> StorageBehaviourSuite<DiskStorage> {
        let counting = StorageBehaviourSuite<DiskStorage>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? -1 }
        )
        let root = folder.url
        return StorageBehaviourSuite(
            keys: ["a", "b", "c", "../escape", "é"],
            values: [data("one"), data("two"), data("three"), Data()],
            counting: counting,
            concurrentUpdates: 50
        ) {
            try DiskStorage(
                url: root.appendingPathComponent(UUID().uuidString),
                options: DiskStorage.Options(mode: mode)
            )
        }
    }

    @Test func cacheModeKeepsTheRulesOfEveryStorage() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        try await Self.behaviourSuite(mode: .cache, in: folder).run()
    }

    @Test func storeModeKeepsTheRulesOfEveryStorage() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        try await Self.behaviourSuite(mode: .store, in: folder).run()
    }

    // MARK: Reading and writing

    @Test func setValueReadsBack() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)

        try storage.set(Self.data("Kharkiv"), forKey: "kharkiv")

        #expect(try storage.value(forKey: "kharkiv") == Self.data("Kharkiv"))
        #expect(try storage.value(forKey: "kyiv") == nil)
    }

    @Test func overwriteReplacesTheValueAndItsSize() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Data(count: 1000), forKey: "a")

        try storage.set(Self.data("short"), forKey: "a")

        #expect(try storage.value(forKey: "a") == Self.data("short"))
        let files = StoreFiles(of: folder.url)
        #expect(storage.count == 1)
        #expect(files.records.count == 1)
        #expect(storage.totalSize == files.totalSize)
        #expect(storage.totalSize == DiskRecordHeader.fixedSize + 1 + 5)
    }

    @Test func removeValueRemovesTheKeyAndItsFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.data("1"), forKey: "a")
        try storage.set(Self.data("2"), forKey: "b")

        try storage.removeValue(forKey: "a")
        try storage.removeValue(forKey: "never stored")

        #expect(try storage.value(forKey: "a") == nil)
        #expect(try storage.value(forKey: "b") == Self.data("2"))
        #expect(StoreFiles(of: folder.url).records == [relativePath(forKey: "b")])
        #expect(storage.count == 1)
    }

    @Test func keysCountAndTotalSizeDescribeWhatIsOnDisk() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)

        for (index, key) in ["a", "b", "c"].enumerated() {
            try storage.set(Data(count: index * 100), forKey: key)
        }

        let files = StoreFiles(of: folder.url)
        #expect(Set(storage.keys()) == ["a", "b", "c"])
        #expect(Set(files.keys.values) == ["a", "b", "c"])
        #expect(storage.count == 3)
        #expect(storage.totalSize == files.totalSize)
        #expect(storage.totalSize == 3 * (DiskRecordHeader.fixedSize + 1) + 300)
    }

    @Test func removeAllRemovesEveryValueButKeepsTheManifest() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        for key in ["a", "b", "c"] {
            try storage.set(Self.data(key), forKey: key)
        }

        try storage.removeAll()

        #expect(storage.keys().isEmpty)
        #expect(storage.count == 0)
        #expect(storage.totalSize == 0)
        #expect(try storage.value(forKey: "a") == nil)
        #expect(StoreFiles(of: folder.url).records.isEmpty)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/" + DiskStorage.manifestName))
    }

    @Test func asyncProtocolsAndCodecsWorkOnTop() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cities = try DiskStorage(url: folder.url).json(City.self)

        try await cities.set(.kharkiv, forKey: "kharkiv")

        #expect(try await cities.value(forKey: "kharkiv") == .kharkiv)
    }

    // MARK: Limits

    @Test func byteLimitEvictsTheLeastRecentlyUsedValuesAndTheirFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let recordSize = DiskRecordHeader.fixedSize + 1 + 100
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(maximumByteCount: 3 * recordSize))
        for key in ["a", "b", "c"] {
            try storage.set(Data(count: 100), forKey: key)
        }
        _ = try storage.value(forKey: "a")

        try storage.set(Data(count: 100), forKey: "d")

        #expect(Set(storage.keys()) == ["a", "c", "d"])
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["a", "c", "d"])
        #expect(storage.totalSize == 3 * recordSize)
        #expect(storage.statistics.evictions == 1)
    }

    @Test func valueOverTheByteLimitIsNotKeptByACacheAndDropsTheOlderOne() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url, options: DiskStorage.Options(maximumByteCount: 1000))
        try storage.set(Self.data("small"), forKey: "a")
        try storage.set(Self.data("small"), forKey: "b")

        try storage.set(Data(count: 1000), forKey: "a")
        try storage.update(forKey: "b") { $0 = Data(count: 1000) }

        #expect(try storage.value(forKey: "a") == nil)
        #expect(try storage.value(forKey: "b") == nil)
        #expect(StoreFiles(of: folder.url).records.isEmpty)
        #expect(storage.statistics.rejections == 2)
    }

    @Test func storeRefusesAWriteOverItsLimitsAndKeepsWhatItHas() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(
            url: folder.url,
            options: DiskStorage.Options(mode: .store, maximumByteCount: 1000, maximumCount: 2)
        )
        try storage.set(Self.data("1"), forKey: "a")
        try storage.set(Self.data("2"), forKey: "b")

        let tooMany = #expect(throws: StorageError.self) { try storage.set(Self.data("3"), forKey: "c") }
        let tooLarge = #expect(throws: StorageError.self) { try storage.set(Data(count: 1000), forKey: "a") }
        let updatedTooLarge = #expect(throws: StorageError.self) {
            try storage.update(forKey: "b") { $0 = Data(count: 1000) }
        }

        #expect(tooMany?.code == .capacityExceeded)
        #expect(tooLarge?.code == .capacityExceeded)
        #expect(updatedTooLarge?.code == .capacityExceeded)
        #expect(try storage.value(forKey: "a") == Self.data("1"))
        #expect(try storage.value(forKey: "b") == Self.data("2"))
        #expect(try storage.value(forKey: "c") == nil)
    }

    // MARK: Time to live

    @Test func expiredValueReadsAsAbsentAndItsFileIsRemoved() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options(timeToLive: .seconds(60))
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try storage.set(Self.data("1"), forKey: "a")

        clock.advance(by: .seconds(59))
        let beforeExpiry = try storage.value(forKey: "a")
        clock.advance(by: .seconds(1))
        let atExpiry = try storage.value(forKey: "a")

        #expect(beforeExpiry == Self.data("1"))
        #expect(atExpiry == nil)
        #expect(StoreFiles(of: folder.url).records.isEmpty)
        #expect(storage.count == 0)
        #expect(storage.statistics.expirations == 1)
    }

    @Test func timeToLiveOfASetOverridesTheDefault() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options(timeToLive: .seconds(60))
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try storage.set(Self.data("short"), forKey: "short", timeToLive: .seconds(10))
        try storage.set(Self.data("default"), forKey: "default")

        clock.advance(by: .seconds(30))

        #expect(try storage.value(forKey: "short") == nil)
        #expect(try storage.value(forKey: "default") == Self.data("default"))
        #expect(storage.entries().first?.expiry == clock.now().addingTimeInterval(30))
    }

    @Test func removeExpiredRemovesOnlyExpiredValuesAndTheirFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let storage = try DiskStorage(url: folder.url, options: options)
        try storage.set(Self.data("1"), forKey: "soon", timeToLive: .seconds(10))
        try storage.set(Self.data("2"), forKey: "later", timeToLive: .seconds(100))
        try storage.set(Self.data("3"), forKey: "never")

        clock.advance(by: .seconds(50))
        let removed = try storage.removeExpired()

        #expect(removed == 1)
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["later", "never"])
        #expect(Set(storage.keys()) == ["later", "never"])
        #expect(storage.count == 2)
    }

    @Test func expiredFilesAreRemovedWhenTheFolderIsOpened() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        let first = try DiskStorage(url: folder.url, options: options)
        try first.set(Self.data("1"), forKey: "soon", timeToLive: .seconds(10))
        try first.set(Self.data("2"), forKey: "never")

        clock.advance(by: .seconds(10))
        let reopened = try DiskStorage(url: folder.url, options: options)

        #expect(reopened.keys() == ["never"])
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["never"])
    }

    // MARK: Reopening

    @Test func reopeningKeepsTheValuesAndTheIndex() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let first = try DiskStorage(url: folder.url)
        for index in 0..<20 {
            try first.set(Data(repeating: UInt8(index), count: index * 10), forKey: "key-\(index)")
        }
        try first.removeValue(forKey: "key-3")

        let reopened = try DiskStorage(url: folder.url)

        #expect(reopened.count == first.count)
        #expect(reopened.totalSize == first.totalSize)
        #expect(Set(reopened.keys()) == Set(first.keys()))
        for index in 0..<20 where index != 3 {
            #expect(try reopened.value(forKey: "key-\(index)") == Data(repeating: UInt8(index), count: index * 10))
        }
        #expect(try reopened.value(forKey: "key-3") == nil)
    }

    @Test func leastRecentlyUsedValueIsStillTheVictimAfterReopening() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options(maximumCount: 3)
        options.recencyResolution = .zero
        let first = try DiskStorage(url: folder.url, options: options)
        for key in ["a", "b", "c"] {
            try first.set(Self.data(key), forKey: key)
        }
        // Reads in the order b, c, a: b is now the least recently used, a the most.
        for key in ["b", "c", "a"] {
            _ = try first.value(forKey: key)
        }

        let reopened = try DiskStorage(url: folder.url, options: options)
        try reopened.set(Self.data("d"), forKey: "d")

        #expect(Set(reopened.keys()) == ["a", "c", "d"])
        #expect(try reopened.value(forKey: "b") == nil)
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["a", "c", "d"])
    }

    /// A folder opened with a lower limit than it was filled under keeps the most recently used
    /// values and removes the others' files; a value over the byte limit is not indexed.
    @Test(arguments: [false, true])
    func openingUnderALowerLimitKeepsTheMostRecentlyUsed(fromSnapshot: Bool) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options()
        options.recencyResolution = .zero
        let first = try DiskStorage(url: folder.url, options: options)
        for key in ["a", "b", "c", "d", "e"] {
            try first.set(Self.data(key), forKey: key)
        }
        // Reads in the order d, a, e, c, b: d and a are now the least recently used.
        for key in ["d", "a", "e", "c", "b"] {
            _ = try first.value(forKey: key)
            usleep(20_000)  // distinct file times, whatever the clock's tick
        }
        try first.set(Data(repeating: 1, count: 10_000), forKey: "huge")
        let huge = folder.path + "/" + relativePath(forKey: "huge")
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3600)],
            ofItemAtPath: huge
        )
        if fromSnapshot {
            try folder.ageValueFolders()
            try first.saveIndex()
        }

        var lower = options
        lower.maximumCount = 3
        lower.maximumByteCount = 5_000
        let reopened = try DiskStorage(url: folder.url, options: lower)

        #expect(reopened.openedFolders.fromSnapshot == (fromSnapshot ? 256 : 0))
        #expect(Set(reopened.keys()) == ["b", "c", "e"])
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["b", "c", "e", "huge"], "left, as before")
        #expect(try reopened.value(forKey: "b") == Self.data("b"))
    }

    // MARK: Layout

    @Test func filesAreNamedByTheKeysDigestIn256Folders() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)

        try storage.set(Self.data("Kharkiv"), forKey: "kharkiv")

        // SHA-256("kharkiv"), first 16 bytes.
        let name = fileName(forKey: "kharkiv")
        #expect(name.count == 32)
        #expect(StoreFiles(of: folder.url).records == ["\(name.prefix(2))/\(name)"])
        let folders = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.count == 2 }
        #expect(folders.count == 256, "every value folder is made with the store")
        let manifest = try #require(FileManager.default.contents(atPath: folder.path + "/" + DiskStorage.manifestName))
        #expect(try DiskManifest.decode(manifest) == DiskManifest.current)
    }

    @Test func openingAFolderOfAnotherProgramFailsAndChangesNothing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.data("notes").write(to: folder.url.appendingPathComponent("notes.txt"))
        try FileManager.default.createDirectory(at: folder.child("a/bc"), withIntermediateDirectories: true)
        try Self.data("x").write(to: folder.child("a/bc").appendingPathComponent(String(repeating: "0", count: 32)))
        let before = FolderListing(of: folder.url)

        let error = try Self.openingError(folder.url)
        #expect(error.code == .invalidConfiguration)
        #expect(FolderListing(of: folder.url) == before)
    }

    /// A process ID no system hands out (Linux's largest is 4,194,304): the writer is dead.
    static let deadProcess: Int32 = 2_147_483_646

    @Test func aFirstOpenKilledBeforeItsManifestWasRenamedLeavesAFolderThatStillOpens() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let leftover = folder.url.appendingPathComponent(".tmp-manifest-\(Self.deadProcess)")
        try Self.data("{\"format\": \"strata.disk\"").write(to: leftover)

        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.data("kept"), forKey: "key")

        #expect(try storage.value(forKey: "key") == Self.data("kept"))
        #expect(!FileManager.default.fileExists(atPath: leftover.path), "the dead writer's manifest is gone")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/" + DiskStorage.manifestName))
        #expect(StoreFiles(of: folder.url).temporaries.isEmpty)
    }

    @Test func aLiveWritersTemporaryManifestIsLeftAloneAndAnotherProgramsDotFileStillRefuses() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // Another process opening the same new folder at this moment: its file is not removed.
        let live = folder.url.appendingPathComponent(".tmp-manifest-\(getppid())")
        try Self.data("{}").write(to: live)
        _ = try DiskStorage(url: folder.url)
        #expect(FileManager.default.fileExists(atPath: live.path))

        // A file that only looks like Strata's is someone else's: the folder is refused as before.
        let other = try TemporaryFolder()
        defer { other.remove() }
        try Self.data("notes").write(to: other.url.appendingPathComponent(".tmp-manifest-notes"))
        let before = FolderListing(of: other.url)
        let error = try Self.openingError(other.url)
        #expect(error.code == .invalidConfiguration)
        #expect(FolderListing(of: other.url) == before)
    }

    @Test func openingAFolderOfANewerFormatFailsAndTouchesNothing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options()
        options.clock = clock
        try DiskStorage(url: folder.url, options: options).set(
            Self.data("1"),
            forKey: "expired",
            timeToLive: .seconds(1)
        )
        let manifest = #"{"format": "strata.disk", "layout": "sha256-128/256", "version": 3}"#
        try Self.data(manifest).write(to: folder.url.appendingPathComponent(DiskStorage.manifestName))
        let before = FolderListing(of: folder.url)

        clock.advance(by: .seconds(10))
        let error = try Self.openingError(folder.url, options: options)

        #expect(error.code == .unsupported)
        #expect(error.message.contains("version 3"))
        #expect(FolderListing(of: folder.url) == before)
    }

    @Test func openingAFolderWithAForeignManifestFails() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.data(#"{"format": "other"}"#).write(to: folder.url.appendingPathComponent(DiskStorage.manifestName))
        let before = FolderListing(of: folder.url)

        let error = try Self.openingError(folder.url)

        #expect(error.code == .invalidConfiguration)
        #expect(FolderListing(of: folder.url) == before)
    }

    @Test func composedAndDecomposedAccentsAreTheSameKey() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let composed = "caf\u{e9}"
        let decomposed = "cafe\u{301}"

        try storage.set(Self.data("composed"), forKey: composed)
        try storage.set(Self.data("decomposed"), forKey: decomposed)

        #expect(try storage.value(forKey: composed) == Self.data("decomposed"))
        #expect(storage.count == 1)
        #expect(StoreFiles(of: folder.url).records == [relativePath(forKey: composed)])
        #expect(storage.keys().map { Array($0.unicodeScalars) } == [Array(composed.unicodeScalars)])
    }

    @Test func filesAreOwnerOnlyByDefault() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        let storage = try DiskStorage(url: root)

        try storage.set(Self.data("1"), forKey: "a")

        let path = relativePath(forKey: "a")
        let shards = [String(path.prefix(2))]
        #expect(FileStatus(root.path)?.permissions == 0o700)
        for shard in shards {
            #expect(FileStatus(root.path + "/" + shard)?.permissions == 0o700)
        }
        #expect(FileStatus(root.path + "/" + path)?.permissions == 0o600)
        #expect(FileStatus(root.path + "/" + DiskStorage.manifestName)?.permissions == 0o600)
    }

    @Test func configuredPermissionsAreUsed() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        var options = DiskStorage.Options()
        options.filePermissions = 0o640
        options.folderPermissions = 0o750
        let storage = try DiskStorage(url: root, options: options)

        try storage.set(Self.data("1"), forKey: "a")

        #expect(FileStatus(root.path)?.permissions == 0o750)
        #expect(FileStatus(root.path + "/" + relativePath(forKey: "a"))?.permissions == 0o640)
    }

    // MARK: Helpers

    /// The error opening `url` throws; fails the test if it opens.
    private static func openingError(
        _ url: URL,
        options: DiskStorage.Options = DiskStorage.Options()
    ) throws -> StorageError {
        do {
            _ = try DiskStorage(url: url, options: options)
        } catch {
            return error
        }
        Issue.record("opening \(url.path) succeeded")
        throw CancellationError()
    }
}
