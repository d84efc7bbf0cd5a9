import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// What a durable storage flushes: the value's file, the folder it was renamed in, and the
/// parent of every folder it created, so that power loss after a set keeps the value. (Whether
/// the drive honours a flush cannot be tested here; that the right things are flushed can.)
@Suite(.onTestThreads) struct DurabilityTests {
    @Test func aDurableStoreFlushesTheFileItsFolderAndTheParentsOfNewFolders() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        SystemCalls.flushes.watch(folder.path)
        let root = folder.child("store").path
        let storage = try DiskStorage(url: URL(fileURLWithPath: root), options: DiskStorage.Options(isDurable: true))
        try storage.set(Data("value".utf8), forKey: "key")
        let flushed = SystemCalls.flushes.stopWatching(folder.path)

        let files =
            FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }
            .filter {
                $0.split(separator: "/").count == 2 && !$0.hasPrefix(".") && !$0.hasSuffix(".json")
                    && !$0.hasPrefix(DiskStorage.lockFolderName)
            } ?? []
        let file = root + "/" + (try #require(files.first))
        #expect(files.count == 1)
        let shard = (file as NSString).deletingLastPathComponent
        // The root's entry in its parent; the root, once the value folders made with the store
        // are in it; the file; and the rename into its folder.
        #expect(flushed.contains(folder.path), "\(flushed)")
        #expect(flushed.contains(root), "\(flushed)")
        #expect(flushed.filter { $0 == shard }.count >= 1, "\(flushed)")
        #expect(flushed.contains { $0.hasPrefix(shard + "/.tmp-") }, "\(flushed)")
        #expect(flushed.firstIndex(of: root)! < flushed.lastIndex(of: shard)!)
    }

    @Test func aStorageThatIsNotDurableFlushesNothing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        SystemCalls.flushes.watch(folder.path)
        let storage = try DiskStorage(url: folder.child("store"))
        try storage.set(Data("value".utf8), forKey: "key")
        try storage.set(Data("again".utf8), forKey: "key")

        #expect(SystemCalls.flushes.stopWatching(folder.path) == [])
    }

    @Test func makingFoldersDurablyFlushesTheParentOfEachNewOneOnly() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let existing = folder.child("a").path
        try SystemCalls.makeFolders(existing, permissions: 0o700)
        SystemCalls.flushes.watch(folder.path)

        try SystemCalls.makeFolders(existing + "/b/c", permissions: 0o700, durable: true)

        #expect(SystemCalls.flushes.stopWatching(folder.path) == [existing, existing + "/b"])
    }
}
