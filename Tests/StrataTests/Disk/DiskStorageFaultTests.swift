import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system refusing a write: each failure is a ``StorageError`` with code `io` carrying the
/// system's reason, leaves the old value and no partial file, and the storage works again once the
/// cause is gone.
@Suite(.onTestThreads) struct DiskStorageFaultTests {
    private static let old = Data(repeating: 1, count: 2000)
    private static let new = Data(repeating: 2, count: 3000)

    /// Checks an error against the `errno` that caused it.
    private static func expectIOError(_ error: StorageError?, errno expected: Int32) {
        #expect(error?.code == .io)
        #expect(error?.key == "k")
        let reason = String(cString: strerror(expected))
        #expect(error?.message.contains(reason) == true, "\(String(describing: error)) should say '\(reason)'")
        #expect((error?.underlying as? SystemCallError)?.errno == expected)
    }

    /// Checks that a failed write left the old value and no temporary file.
    private static func expectOldValueAndNoPartialFile(_ storage: DiskStorage, in folder: URL) throws {
        #expect(try storage.value(forKey: "k") == old)
        #expect(StoreFiles(of: folder).temporaries.isEmpty)
        #expect(try DiskStorage(url: folder).value(forKey: "k") == old)
    }

    @Test func readOnlyFolderGivesIOErrorWithTheSystemsReasonAndRecovers() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // Permission bits do not stop root: as root, a read-only tmpfs stands in for a read-only
        // folder (and a file where the folder should be, in the next test, where mounting fails).
        let isRoot = geteuid() == 0
        guard !isRoot || TemporaryMount.isAvailable else {
            print("DiskStorageFaultTests: running as root without mount(2); see the ENOTDIR test instead")
            return
        }
        let mount = isRoot ? try TemporaryMount(byteCount: 1 << 20, in: folder.url) : nil
        defer { mount?.unmount() }
        let root = (mount?.url ?? folder.url).appendingPathComponent("store")
        let storage = try DiskStorage(url: root)
        try storage.set(Self.old, forKey: "k")
        let shard = root.path + "/" + relativePath(forKey: "k").prefix(4)

        if let mount {
            try mount.remount(readOnly: true)
        } else {
            chmod(shard, 0o500)
        }
        let error = #expect(throws: StorageError.self) { try storage.set(Self.new, forKey: "k") }
        let removeError = #expect(throws: StorageError.self) { try storage.removeValue(forKey: "k") }
        let expected = isRoot ? EROFS : EACCES

        Self.expectIOError(error, errno: expected)
        Self.expectIOError(removeError, errno: expected)
        try Self.expectOldValueAndNoPartialFile(storage, in: root)
        if let mount {
            try mount.remount(readOnly: false)
        } else {
            chmod(shard, 0o700)
        }
        try storage.set(Self.new, forKey: "k")
        #expect(try storage.value(forKey: "k") == Self.new)
    }

    @Test(.enabled(if: TemporaryMount.isAvailable, "mounting a small tmpfs needs Linux and root"))
    func trimOnAReadOnlyFolderThrowsCountsTheFailuresAndLosesNothing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let mount = try TemporaryMount(byteCount: 1 << 20, in: folder.url)
        defer { mount.unmount() }
        let root = mount.url.appendingPathComponent("store")
        let storage = try DiskStorage(url: root)
        let keys = ["a", "b", "c"]
        for key in keys { try storage.set(Self.old, forKey: key) }
        try mount.remount(readOnly: true)

        let error = #expect(throws: StorageError.self) { try storage.trim(toByteCount: 0) }

        #expect(error?.code == .io)
        #expect(error?.message.contains("could not remove 3 of 3 files") == true, "\(String(describing: error))")
        #expect((error?.underlying as? SystemCallError)?.errno == EROFS)
        #expect(storage.statistics.removalFailures == 3)
        for key in keys { #expect(try storage.value(forKey: key) == Self.old, "\(key) is still there and readable") }
        try mount.remount(readOnly: false)
        #expect(try storage.trim(toByteCount: 0) == 3)
        #expect(storage.count == 0)
        #expect(StoreFiles(of: root).records.isEmpty)
    }

    @Test func fileInPlaceOfAShardFolderGivesIOErrorAndTheStorageRecovers() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Self.old, forKey: "other")
        let shard = folder.path + "/" + relativePath(forKey: "k").prefix(2)
        try? FileManager.default.removeItem(atPath: shard)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: shard))

        let error = #expect(throws: StorageError.self) { try storage.set(Self.new, forKey: "k") }

        Self.expectIOError(error, errno: ENOTDIR)
        #expect(try storage.value(forKey: "k") == nil)
        #expect(StoreFiles(of: folder.url).temporaries.isEmpty)
        try FileManager.default.removeItem(atPath: shard)
        try storage.set(Self.new, forKey: "k")
        #expect(try storage.value(forKey: "k") == Self.new)
    }

    @Test func folderDeletedWhileOpenIsRecreatedByTheNextWrite() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        let storage = try DiskStorage(url: root)
        try storage.set(Self.old, forKey: "gone")

        try FileManager.default.removeItem(at: root)
        try storage.set(Self.new, forKey: "k")

        #expect(try storage.value(forKey: "k") == Self.new)
        #expect(try storage.value(forKey: "gone") == nil)
        #expect(storage.keys() == ["k"])
        #expect(storage.totalSize == StoreFiles(of: root).totalSize)
        #expect(FileManager.default.fileExists(atPath: root.path + "/" + DiskStorage.manifestName))
        #expect(FileStatus(root.path)?.permissions == 0o700)
        #expect(try DiskStorage(url: root).keys() == ["k"])
    }

    @Test func folderDeletedWhileOpenReadsAsEmptyAndRemovesQuietly() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        let storage = try DiskStorage(url: root)
        try storage.set(Self.old, forKey: "k")

        try FileManager.default.removeItem(at: root)

        #expect(try storage.value(forKey: "k") == nil)
        try storage.removeValue(forKey: "k")
        try storage.removeAll()
        #expect(try storage.removeExpired() == 0)
        #expect(storage.count == 0)
    }

    @Test(.enabled(if: TemporaryMount.isAvailable, "mounting a small tmpfs needs Linux and root"))
    func fullDiskGivesIOErrorKeepsTheOldValueAndRecovers() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let mount = try TemporaryMount(byteCount: 64 * 1024, in: folder.url)
        defer { mount.unmount() }
        let root = mount.url.appendingPathComponent("store")
        let storage = try DiskStorage(url: root)
        try storage.set(Self.old, forKey: "k")
        let filler = mount.url.appendingPathComponent("filler").path
        Self.fill(filler)

        let error = #expect(throws: StorageError.self) { try storage.set(Self.new, forKey: "k") }

        Self.expectIOError(error, errno: ENOSPC)
        try Self.expectOldValueAndNoPartialFile(storage, in: root)
        unlink(filler)
        try storage.set(Self.new, forKey: "k")
        #expect(try storage.value(forKey: "k") == Self.new)
    }

    /// Writes a file at `path` until the file system is full.
    private static func fill(_ path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 512)
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }
}
