import Foundation
import GRDB
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// Bad input for SQLiteStorage: damaged files, hostile keys, rows written by others and a closed
/// storage each give a clear ``StorageError``, never a crash or a changed statement.
@Suite(.onTestThreads) struct SQLiteStorageFaultTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    @Test func aFileOfGarbageIsReportedAsCorruptedAtOpen() throws {
        let path = folder.path("garbage.sqlite")
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<8_192).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try garbage.write(to: URL(fileURLWithPath: path))

        let error = #expect(throws: StorageError.self) {
            try SQLiteStorage(path: path)
        }

        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("not a SQLite database") == true)
    }

    @Test func aDamagedDatabaseIsReportedAsCorrupted() throws {
        let path = folder.path("damaged.sqlite")
        let storage = try SQLiteStorage(path: path)
        try storage.setValues(Dictionary(uniqueKeysWithValues: (0..<200).map { ("k\($0)", Data(count: 500)) }))
        try storage.close()
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 100))
        try handle.close()

        let error = #expect(throws: StorageError.self) {
            let reopened = try SQLiteStorage(path: path)
            _ = try reopened.keys()
        }

        #expect(error?.code == .corrupted)
    }

    @Test func aReadWhoseAccessCannotBeRecordedStillReturnsItsValue() throws {
        let path = folder.path("busy.sqlite")
        let clock = ManualClock()
        var options = SQLiteStorage.Options()
        options.recencyResolution = .seconds(1)
        options.busyTimeout = .milliseconds(100)
        options.clock = clock
        let storage = try SQLiteStorage(path: path, options: options)
        try storage.set(Data("kept".utf8), forKey: "a")
        try storage.set(Data("also".utf8), forKey: "b")
        clock.advance(by: .seconds(10))
        // Another connection holds the write lock meanwhile: the access times cannot be written.
        let other = try DatabaseQueue(path: path)
        let (value, values) = try other.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            defer { try? db.execute(sql: "ROLLBACK") }
            return (try storage.value(forKey: "a"), try storage.values(forKeys: ["a", "b"]))
        }
        try other.close()
        #expect(value == Data("kept".utf8))
        #expect(values == [Data("kept".utf8), Data("also".utf8)])
        #expect(try storage.statistics().recencyWriteFailures == 2)
    }

    @Test func aFileFromANewerSchemaIsUnsupported() throws {
        let path = folder.path("newer.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "PRAGMA user_version = 99") }
        try queue.close()

        let error = #expect(throws: StorageError.self) {
            try SQLiteStorage(path: path)
        }

        #expect(error?.code == .unsupported)
    }

    @Test func aRowThatHoldsNoBlobIsReportedAsCorrupted() throws {
        let path = folder.path("foreign.sqlite")
        let storage = try SQLiteStorage(path: path)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: "INSERT INTO strata_values (key, value, size, expiry, accessed) VALUES (X'6E', 42, 1, NULL, 0)"
            )
        }

        let error = #expect(throws: StorageError.self) {
            try storage.value(forKey: "n")
        }

        #expect(error?.code == .corrupted)
        #expect(error?.key == "n")
    }

    @Test func aValueThatDoesNotDecodeIsADecodingError() async throws {
        struct City: Codable, Sendable, Equatable { var name: String }
        let storage = try SQLiteStorage(path: folder.path("json.sqlite"))
        try await storage.set(Data("not json".utf8), forKey: "kyiv")

        let error = await #expect(throws: StorageError.self) {
            try await storage.json(City.self).value(forKey: "kyiv")
        }

        #expect(error?.code == .decodingFailed)
    }

    /// A key with a short description, so long keys do not flood the test log.
    struct HostileKey: CustomTestStringConvertible, Sendable {
        let key: String
        var testDescription: String {
            key.count > 40 ? "\(key.prefix(20))… (\(key.utf8.count) bytes)" : key.debugDescription
        }
    }

    static let hostileKeys = [
        "'); DROP TABLE strata_values; --",
        "\" OR 1=1 --",
        "a\u{0}b",
        "../../etc/passwd",
        String(repeating: "k", count: 10_000),
        "ключ 🔑",
        "%_*?",
        "",
    ].map(HostileKey.init)

    @Test(arguments: hostileKeys)
    func hostileKeysAreStoredVerbatim(hostile: HostileKey) throws {
        let key = hostile.key
        let storage = try SQLiteStorage(path: folder.path("hostile.sqlite"))
        try storage.set(Data("safe".utf8), forKey: "other")

        try storage.set(Data("value".utf8), forKey: key)

        #expect(try storage.value(forKey: key) == Data("value".utf8))
        #expect(Set(try storage.keys()) == [key, "other"])
        #expect(try storage.value(forKey: "other") == Data("safe".utf8))
        try storage.removeValue(forKey: key)
        #expect(try storage.keys() == ["other"])
    }

    @Test func aClosedStorageThrowsClosed() throws {
        let storage = try SQLiteStorage(path: folder.path("closed.sqlite"))
        try storage.close()

        let error = #expect(throws: StorageError.self) {
            try storage.set(Data([1]), forKey: "a")
        }

        #expect(error?.code == .closed)
        #expect(throws: StorageError.self) { try storage.value(forKey: "a") }
    }

    @Test func aFolderThatDoesNotExistIsAnIOError() throws {
        let error = #expect(throws: StorageError.self) {
            try SQLiteStorage(path: folder.path("missing/folder/values.sqlite"))
        }

        #expect(error?.code == .io)
    }
}
