import Foundation
import Strata
import StrataTestSupport
import Testing
import _StrataInternals

@testable import StrataObjects

/// With `readsInPlace` (the default), the async `record(forKey:)` of a caller on no actor reads a
/// record the page cache holds on the caller's thread, with calls that cannot wait for the disk;
/// everything else (a caller on an actor, a missing record, a bad key, a record under an earlier
/// spelling) goes to the I/O threads, which answer as before.
@Suite(.onTestThreads) struct ObjectFolderReadInPlaceTests {
    /// Reads as a server's request handler would: from no actor.
    @concurrent
    private static func read(_ key: String, from folder: ObjectFolder) async throws -> Data? {
        try await folder.record(forKey: key)
    }

    @concurrent
    @Test func aCachedRecordIsReadOnTheCallersThread() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = try ObjectFolder(url: scratch.url)
        try await folder.setRecord(Data(#"{"city":"odesa"}"#.utf8), forKey: "a")
        try await folder.setRecord(Data(), forKey: "empty")

        let record = try await readUntilInPlace(counting: folder.readsInPlace) {
            try await Self.read("a", from: folder)
        }
        let empty = try await readUntilInPlace(counting: folder.readsInPlace) {
            try await Self.read("empty", from: folder)
        }

        #expect(record.value == Data(#"{"city":"odesa"}"#.utf8))
        #expect(empty.value == Data())
        #expect(folder.readsInPlace == inPlace(2))
    }

    @MainActor
    @Test func aCallerOnTheMainActorIsNeverAnsweredOnItsThread() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = try ObjectFolder(url: scratch.url)
        try await folder.setRecord(Data("dnipro".utf8), forKey: "a")

        let record = try await folder.record(forKey: "a")

        #expect(record == Data("dnipro".utf8))
        #expect(folder.readsInPlace == 0)
    }

    /// The default reads in place; with the option off, every read goes to the I/O threads.
    @concurrent
    @Test(arguments: [nil, false])
    func theOptionDecidesWhereARecordIsRead(readsInPlace: Bool?) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        var options = ObjectFolder.Options()
        if let readsInPlace { options.readsInPlace = readsInPlace }
        let folder = try ObjectFolder(url: scratch.url, options: options)
        try await folder.setRecord(Data("poltava".utf8), forKey: "a")

        let read = try await readUntilInPlace(counting: folder.readsInPlace, limit: 20) {
            try await Self.read("a", from: folder)
        }

        #expect(read.value == Data("poltava".utf8))
        #expect(folder.readsInPlace == inPlace(readsInPlace == false ? 0 : 1))
        if readsInPlace == false { #expect(read.reads == (SystemCalls.platformReadsInPlace ? 20 : 1)) }
    }

    /// A missing record, a key that names no file, a key that tries to leave the folder (a file
    /// waits where it would lead if it were not escaped: up from `<root>/<2 hex>/<2 hex>/`) and a
    /// record over 256 KiB: none is read in place, and the I/O threads answer each as they always
    /// have.
    @concurrent
    @Test func missingBadHostileAndLargeRecordsAreLeftToTheIOThreads() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = try ObjectFolder(url: scratch.child("store"))
        try Data("outside".utf8).write(to: scratch.url.appendingPathComponent("escape.json"))
        let large = Data(repeating: 0x7b, count: ObjectFolder.largestReadInPlace + 1)
        try await folder.setRecord(large, forKey: "large")

        let missing = try await Self.read("nobody", from: folder)
        let hostile = try await Self.read("../../../escape", from: folder)
        let error = await #expect(throws: StorageError.self) { try await Self.read("", from: folder) }
        let read = try await Self.read("large", from: folder)

        #expect(missing == nil)
        #expect(hostile == nil)
        #expect(error?.code == .invalidKey)
        #expect(read == large)
        #expect(folder.readsInPlace == 0)
    }

    /// A record an earlier version filed under the decomposed spelling is not where a read in
    /// place looks; the I/O threads find it.
    @concurrent
    @Test func aRecordUnderAnEarlierSpellingIsFoundOnTheIOThreads() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = try ObjectFolder(url: scratch.url)
        let earlier = try folder.paths(spelled: "caf\u{65}\u{301}")
        try FileManager.default.createDirectory(atPath: earlier.folder, withIntermediateDirectories: true)
        try Data("legacy".utf8).write(to: URL(fileURLWithPath: earlier.file))

        let record = try await Self.read("caf\u{e9}", from: folder)

        #expect(record == Data("legacy".utf8))
        #expect(folder.readsInPlace == 0)
    }

    @concurrent
    @Test func aRecordReplacedThroughAnotherFolderIsReadAsItIsNow() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let reader = try ObjectFolder(url: scratch.url)
        let writer = try ObjectFolder(url: scratch.url)
        try await reader.setRecord(Data("old".utf8), forKey: "a")
        let old = try await readUntilInPlace(counting: reader.readsInPlace) {
            try await Self.read("a", from: reader)
        }
        try await writer.setRecord(Data("new".utf8), forKey: "a")

        let record = try await readUntilInPlace(counting: reader.readsInPlace) {
            try await Self.read("a", from: reader)
        }

        #expect(old.value == Data("old".utf8))
        #expect(record.value == Data("new".utf8))
        #expect(reader.readsInPlace == inPlace(2))
    }

    /// What a server's handler does: fetch an object by ID through the store.
    @concurrent
    @Test func aStoresFetchFromNoActorReadsInPlaceAndDecodes() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = try ObjectFolder(url: scratch.url)
        let store = ObjectStore<Note>(backend: folder)
        let note = Note(title: "kyiv", tags: ["capital"])
        try await store.save(note)

        let fetched = try await readUntilInPlace(counting: folder.readsInPlace) {
            try await store.object(withID: note.id)
        }

        #expect(fetched.value == note)
        #expect(folder.readsInPlace == inPlace(1))
    }
}
