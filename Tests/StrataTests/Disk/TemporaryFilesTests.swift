import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Temporary files name their writer's process and incarnation, so a leftover of an earlier run
/// with the same process ID (a container's PID 1) is told from this process's own.
@Suite(.onTestThreads) struct TemporaryFilesTests {
    static let me = getpid()
    static let other = "0123456789abcdef" == TemporaryFiles.incarnation ? "fedcba9876543210" : "0123456789abcdef"
    static let dead: Int32 = 2_147_483_646

    @Test func namesAreJudgedByProcessAndIncarnation() {
        #expect(TemporaryFiles.isAbandoned(TemporaryFiles.name(7)) == false, "this process's own file")
        #expect(TemporaryFiles.isAbandoned(".tmp-\(Self.me)-\(Self.other)-7") == true, "an earlier run with our ID")
        #expect(TemporaryFiles.isAbandoned(".tmp-\(Self.me)-7") == true, "an earlier version's name with our ID")
        #expect(TemporaryFiles.isAbandoned(".tmp-\(Self.dead)-\(Self.other)-7") == true)
        #expect(TemporaryFiles.isAbandoned(".tmp-\(Self.dead)-7") == true)
        #expect(TemporaryFiles.isAbandoned(".tmp-\(getppid())-\(Self.other)-7") == false, "a live process")
        #expect(TemporaryFiles.isAbandoned(TemporaryFiles.name(tag: "manifest"), tag: "manifest") == false)
        #expect(TemporaryFiles.isAbandoned(".tmp-manifest-\(Self.me)-\(Self.other)", tag: "manifest") == true)
        #expect(TemporaryFiles.isAbandoned(".tmp-manifest-\(Self.dead)", tag: "manifest") == true)
        for foreign in ["notes.txt", ".tmp-notes", ".tmp--1", ".tmp-12-ab-3-4", ".tmp-manifest-notes"] {
            #expect(TemporaryFiles.isAbandoned(foreign, tag: foreign.contains("manifest") ? "manifest" : nil) == nil)
        }
    }

    @Test func openingRemovesAnEarlierRunsLeftoversWithThisProcesssIDAndKeepsItsOwn() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Data("v".utf8), forKey: "k")
        let shard = URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "k")).deletingLastPathComponent()
        let earlierRun = shard.appendingPathComponent(".tmp-\(Self.me)-\(Self.other)-1")
        let earlierManifest = folder.url.appendingPathComponent(".tmp-manifest-\(Self.me)-\(Self.other)")
        let mine = shard.appendingPathComponent(TemporaryFiles.name(UInt64.max))
        for file in [earlierRun, earlierManifest, mine] { try Data("x".utf8).write(to: file) }

        let reopened = try DiskStorage(url: folder.url)

        #expect(try reopened.value(forKey: "k") == Data("v".utf8))
        #expect(!FileManager.default.fileExists(atPath: earlierRun.path))
        #expect(!FileManager.default.fileExists(atPath: earlierManifest.path))
        #expect(FileManager.default.fileExists(atPath: mine.path), "a file this process may still be writing")
    }

    @Test func aTemporaryNameThatIsNotStratasStaysInTheDiskAndTheObjectFolderAlike() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Data("v".utf8), forKey: "k")
        let shard = URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "k")).deletingLastPathComponent()
        let foreign = shard.appendingPathComponent(".tmp-written-by-a-later-version")
        let dead = shard.appendingPathComponent(".tmp-\(Self.dead)-\(Self.other)-1")
        for file in [foreign, dead] { try Data("x".utf8).write(to: file) }

        let reopened = try DiskStorage(url: folder.url)
        TemporaryFiles.removeIfAbandoned(foreign.lastPathComponent, in: shard.path)

        #expect(try reopened.value(forKey: "k") == Data("v".utf8))
        #expect(FileManager.default.fileExists(atPath: foreign.path), "a file Strata cannot tell is its own")
        #expect(!FileManager.default.fileExists(atPath: dead.path), "a dead process's file")
    }
}
