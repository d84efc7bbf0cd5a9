import Foundation
import Logging
import Strata
import StrataTestSupport
import Testing

@testable import StrataObjects

@Suite(.onTestThreads) struct ObjectFolderTests {
    @Test func objectsFollowSHELFsLayoutAsReadableJSON() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Note>(url: scratch.url)
        let id = try #require(UUID(uuidString: "6273674B-F271-4521-9B74-F5656A1F815D"))

        try await store.save(Note(id: id, title: "Good morning~", tags: ["greeting"]))

        #expect(scratch.files() == ["62/73/6273674B-F271-4521-9B74-F5656A1F815D.json", "strata-objects.json"])
        let text = try String(
            contentsOf: scratch.url.appendingPathComponent("62/73/\(id.uuidString).json"),
            encoding: .utf8
        )
        #expect(text.contains("\n  \"title\" : \"Good morning~\""))
        let configuration = try JSONSerialization.jsonObject(
            with: Data(contentsOf: scratch.url.appendingPathComponent("strata-objects.json"))
        )
        let fields = try #require(configuration as? [String: Any])
        #expect(fields["format"] as? String == "strata-objects")
        #expect(fields["version"] as? Int == 1)
        #expect(fields["compression"] as? String == "none")
    }

    @Test func attachmentsLiveBesideTheirObject() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Note>(url: scratch.url)
        let id = try #require(UUID(uuidString: "A1FB9603-3E2A-4915-BD0A-081D0FF7867A"))
        try await store.save(Note(id: id, title: "photo"))

        try await store.setAttachment(Data([1, 2, 3]), named: "Photo 1.jpg", forObjectWithID: id)

        #expect(scratch.files().contains("A1/FB/\(id.uuidString).attachments/%50hoto%201.jpg"))
        #expect(try await store.attachmentNames(forObjectWithID: id) == ["Photo 1.jpg"])
    }

    @Test func aFolderWithForeignFilesIsRefusedUntouched() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        try Data("mine".utf8).write(to: scratch.url.appendingPathComponent("thesis.txt"))

        let error = #expect(throws: StorageError.self) { try ObjectFolder(url: scratch.url) }

        #expect(error?.code == .invalidConfiguration)
        #expect(scratch.files() == ["thesis.txt"])
    }

    @Test func aNewerFormatIsRefusedAsUnsupported() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let newer = #"{"format":"strata-objects","version":2,"layout":"shelf","compression":"none"}"#
        try Data(newer.utf8).write(to: scratch.url.appendingPathComponent("strata-objects.json"))
        let compressed = #"{"format":"strata-objects","version":1,"layout":"shelf","compression":"zstd"}"#
        let other = scratch.child("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: false)
        try Data(compressed.utf8).write(to: other.appendingPathComponent("strata-objects.json"))

        let newerError = #expect(throws: StorageError.self) { try ObjectFolder(url: scratch.url) }
        let compressedError = #expect(throws: StorageError.self) { try ObjectFolder(url: other) }

        #expect(newerError?.code == .unsupported)
        #expect(compressedError?.code == .unsupported)
    }

    @Test func aDamagedConfigurationIsReported() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        try Data("{ not json".utf8).write(to: scratch.url.appendingPathComponent("strata-objects.json"))

        let error = #expect(throws: StorageError.self) { try ObjectFolder(url: scratch.url) }

        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("strata-objects.json") == true)
    }

    @Test func aConfigurationOfAnotherFormatIsAnotherProgramsAndFinderFilesDoNotCount() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        try Data(#"{"format":"strata.disk","version":2,"layout":"sha256-128/256"}"#.utf8)
            .write(to: scratch.url.appendingPathComponent("strata-objects.json"))
        let error = #expect(throws: StorageError.self) { try ObjectFolder(url: scratch.url) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("format 'strata.disk'") == true)

        let finder = try ScratchFolder()
        defer { finder.remove() }
        try Data().write(to: finder.url.appendingPathComponent(".DS_Store"))
        try Data("{".utf8).write(to: finder.url.appendingPathComponent(".tmp-manifest-2147483646"))
        _ = try ObjectFolder(url: finder.url)
        #expect(finder.files() == [".DS_Store", "strata-objects.json"], "the dead writer's configuration is gone")

        let hidden = try ScratchFolder()
        defer { hidden.remove() }
        try Data("mine".utf8).write(to: hidden.url.appendingPathComponent(".notes"))
        let hiddenError = #expect(throws: StorageError.self) { try ObjectFolder(url: hidden.url) }
        #expect(hiddenError?.code == .invalidConfiguration, "a hidden file of another program's is still its")
        #expect(hidden.files() == [".notes"])
    }

    @Test func aDamagedObjectIsNamedAndTheOthersStayReadable() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Note>(url: scratch.url)
        let damaged = Note(title: "damaged")
        let healthy = (0..<5).map { Note(title: "healthy \($0)") }
        try await store.save(contentsOf: healthy + [damaged])
        let path = try #require(scratch.files().first { $0.contains(damaged.id.uuidString) })
        try Data("{\"title\": \"dam".utf8).write(to: scratch.url.appendingPathComponent(path))
        let reopened = try ObjectStore<Note>(url: scratch.url)

        let fetchError = await #expect(throws: StorageError.self) { try await reopened.object(withID: damaged.id) }
        let queryError = await #expect(throws: StorageError.self) { try await reopened.all() }

        #expect(fetchError?.code == .corrupted)
        #expect(fetchError?.key == damaged.id.uuidString)
        #expect(fetchError?.message.contains(path) == true)
        #expect(queryError?.key == damaged.id.uuidString)
        for note in healthy { #expect(try await reopened.object(withID: note.id) == note) }
        #expect(try await reopened.verify().map(\.key) == [damaged.id.uuidString])
        let skipping = try ObjectStore<Note>(url: scratch.url, options: .init(skipsUnreadableObjects: true))
        #expect(Set(try await skipping.all()) == Set(healthy))
        #expect(FileManager.default.fileExists(atPath: scratch.url.appendingPathComponent(path).path))
    }

    @Test func anObjectFromAnOlderSchemaGivesDecodingFailedNamingIDAndFile() async throws {
        struct NoteV2: Codable, Identifiable, Sendable {
            var id: UUID
            var title: String
            var deadline: Date  // added: old files lack it
        }
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let old = Note(title: "written by v1")
        try await ObjectStore<Note>(url: scratch.url).save(old)
        let store = try ObjectStore<NoteV2>(url: scratch.url)

        let error = await #expect(throws: StorageError.self) { try await store.object(withID: old.id) }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == old.id.uuidString)
        #expect(error?.message.contains("\(old.id.uuidString).json") == true)
        #expect(error?.message.contains("deadline") == true)
        #expect(try await ObjectStore<Note>(url: scratch.url).object(withID: old.id) == old)
    }

    static let hostileIDs: [String] = [
        "../escape", "../../etc/passwd", "/etc/passwd", "a/b", ".", "..", ".hidden", "nul\u{0}byte",
        "new\nline", "Kharkiv", "kharkiv", "😀 emoji", "e\u{301}", "\u{e9}", "%41", "con",
        String(repeating: "x", count: 200),
    ]

    @Test func hostileIDsStayInsideTheFolderAndReadBackTheirOwnObject() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let outside = FileManager.default.temporaryDirectory
        let before = try FileManager.default.contentsOfDirectory(atPath: outside.path).filter {
            !$0.hasPrefix("strata-")
        }
        let store = try ObjectStore<Tagged>(url: scratch.child("store"))

        for (index, id) in Self.hostileIDs.enumerated() {
            try await store.save(Tagged(id: id, value: index))
            try await store.setAttachment(Data([UInt8(index)]), named: id, forObjectWithID: id)
        }

        let reopened = try ObjectStore<Tagged>(url: scratch.child("store"))
        for id in Self.hostileIDs {
            // IDs Swift considers equal ("e\u{301}" and "\u{e9}") name one object: the last saved.
            let last = try #require(Self.hostileIDs.lastIndex(of: id))
            #expect(try await reopened.object(withID: id)?.value == last, "\(id.debugDescription)")
            #expect(try await reopened.attachment(named: id, forObjectWithID: id) == Data([UInt8(last)]))
        }
        #expect(Set(try await reopened.ids()) == Set(Self.hostileIDs))
        #expect(scratch.files().allSatisfy { $0.hasPrefix("store/") })
        let after = try FileManager.default.contentsOfDirectory(atPath: outside.path).filter {
            !$0.hasPrefix("strata-")
        }
        // Other processes (a compiler, another test run) come and go in the temporary directory:
        // what matters is that nothing new there is named after a hostile ID.
        let escaped = Set(after).subtracting(before).filter { name in
            Self.hostileIDs.contains { $0.contains(name) }
        }
        #expect(escaped.isEmpty, "\(escaped)")
    }

    /// What a version that kept IDs as given filed under another Unicode spelling is still read
    /// by either spelling, and the next write moves it, attachments too, to the stored (NFC) one.
    @Test func anObjectFiledUnderAnotherSpellingIsReadAndMovedByTheNextWrite() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let decomposed = "caf\u{65}\u{301}"
        let composed = "caf\u{e9}"
        let folder = try ObjectFolder(url: scratch.child("store"))
        let earlier = try folder.paths(spelled: decomposed)
        let stored = try folder.paths(forKey: composed)
        #expect(earlier.file != stored.file)
        try FileManager.default.createDirectory(atPath: earlier.attachments, withIntermediateDirectories: true)
        try JSONEncoder().encode(Tagged(id: decomposed, value: 1)).write(to: URL(fileURLWithPath: earlier.file))
        let earlierName = try ObjectFolder.fileName(for: "re\u{301}sume\u{301}", what: "attachment name")
        try Data([7]).write(to: URL(fileURLWithPath: earlier.attachments + "/" + earlierName))
        let store = ObjectStore<Tagged>(backend: folder)

        #expect(try await store.object(withID: composed)?.value == 1)
        #expect(try await store.object(withID: decomposed)?.value == 1)
        #expect(try await store.attachment(named: "r\u{e9}sum\u{e9}", forObjectWithID: composed) == Data([7]))

        try await store.save(Tagged(id: composed, value: 2))

        #expect(!FileManager.default.fileExists(atPath: earlier.file))
        #expect(!FileManager.default.fileExists(atPath: earlier.attachments))
        #expect(FileManager.default.fileExists(atPath: stored.file))
        #expect(try await store.count == 1)
        #expect(try await store.object(withID: decomposed)?.value == 2)
        #expect(try await store.attachment(named: "re\u{301}sume\u{301}", forObjectWithID: decomposed) == Data([7]))
        let names = try await store.attachmentNames(forObjectWithID: composed)
        #expect(names.map { Array($0.utf8) } == [Array("r\u{e9}sum\u{e9}".utf8)])

        #expect(try await store.delete(withID: decomposed))
        #expect(
            scratch.files().filter { $0.hasSuffix(".json") && !$0.hasSuffix(ObjectFolder.configurationFileName) }
                .isEmpty
        )
    }

    /// An ID whose stored (NFC) file name fits but whose decomposed spelling would not is read
    /// and written by either spelling, not refused for the spelling it is not stored under; one
    /// longer still is refused with `invalidKey`.
    @Test func anIDWhoseOtherSpellingIsTooLongForAFileNameStillWorks() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Tagged>(url: scratch.child("store"))
        // 40 × "%C3%A9" is 240 bytes, the most a name may have; decomposed, 40 × "e%CC%81" is 280.
        let composed = String(repeating: "\u{e9}", count: 40)
        let decomposed = String(repeating: "e\u{301}", count: 40)

        try await store.save(Tagged(id: decomposed, value: 1))
        try await store.setAttachment(Data([1]), named: decomposed, forObjectWithID: decomposed)

        #expect(try await store.object(withID: composed)?.value == 1)
        #expect(try await store.attachment(named: composed, forObjectWithID: composed) == Data([1]))
        #expect(try await store.delete(withID: composed))
        let tooLong = String(repeating: "\u{e9}", count: 41)
        await #expect {
            try await store.save(Tagged(id: tooLong, value: 2))
        } throws: { ($0 as? StorageError)?.code == .invalidKey }
    }

    /// Writes that race to move the same earlier spelling neither fail nor leave two records.
    @Test func concurrentWritesMovingOneEarlierSpellingAllSucceed() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let decomposed = "caf\u{65}\u{301}"
        let folder = try ObjectFolder(url: scratch.child("store"))
        for round in 0..<60 {
            let earlier = try folder.paths(spelled: decomposed)
            try FileManager.default.createDirectory(atPath: earlier.attachments, withIntermediateDirectories: true)
            try Data("{\"round\":\(round)}".utf8).write(to: URL(fileURLWithPath: earlier.file))
            try Data([UInt8(round)]).write(to: URL(fileURLWithPath: earlier.attachments + "/a\(round)"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        let key = writer.isMultiple(of: 2) ? decomposed : "caf\u{e9}"
                        _ = try await folder.setRecord(Data("{\"writer\":\(writer)}".utf8), forKey: key)
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await folder.keys().count == 1)
            #expect(!FileManager.default.fileExists(atPath: earlier.file))
            #expect(try await folder.attachment(named: "a\(round)", forKey: decomposed) == Data([UInt8(round)]))
        }
    }

    @Test(arguments: ["", String(repeating: "\u{1F600}", count: 100)])
    func unusableIDsAreRefusedAsInvalidKey(_ id: String) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Tagged>(url: scratch.child("store"))

        let error = await #expect(throws: StorageError.self) { try await store.save(Tagged(id: id, value: 1)) }

        #expect(error?.code == .invalidKey)
        #expect(scratch.files() == ["store/strata-objects.json"])
    }

    @Test func anotherStoresWritesAreSeenAfterReloadAndReportedAsChanges() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let mine = try ObjectStore<Note>(url: scratch.url)
        let theirs = try ObjectStore<Note>(url: scratch.url)
        let kept = Note(title: "kept")
        let changed = Note(title: "before")
        let removed = Note(title: "removed")
        try await mine.save(contentsOf: [kept, changed, removed])
        #expect(try await mine.count(matching: nil) == 3)  // loads the in-memory copy
        let added = Note(title: "added")
        try await theirs.save(added)
        try await theirs.update(withID: changed.id) { $0.title = "after" }
        try await theirs.delete(withID: removed.id)
        let changes = mine.changes()

        #expect(try await mine.count(matching: nil) == 3)  // not yet seen
        try await mine.reload()

        #expect(Set(try await mine.all()) == [kept, Note(id: changed.id, title: "after"), added])
        var seen: Set<ObjectChange<UUID>> = []
        for await change in changes {
            seen.insert(change)
            if seen.count == 3 { break }
        }
        #expect(seen == [.inserted(added.id), .updated(changed.id), .deleted(removed.id)])
    }

    @Test func temporaryFilesOfDeadProcessesAreRemovedWhenListing() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Note>(url: scratch.url)
        let id = try #require(UUID(uuidString: "E651E061-7FA2-453D-9FF5-624308BEAE4B"))
        try await store.save(Note(id: id, title: "x"))
        let abandoned = scratch.url.appendingPathComponent("E6/51/.tmp-999999999-1")
        try Data("half".utf8).write(to: abandoned)

        #expect(try await store.ids() == [id])

        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
    }

    /// Whether a tmpfs can be mounted here (Linux, as root).
    static let canMount: Bool = {
        #if os(Linux)
        guard geteuid() == 0, let scratch = try? ScratchFolder() else { return false }
        defer { scratch.remove() }
        guard mount("tmpfs", scratch.path, "tmpfs", 0, "size=16k") == 0 else { return false }
        umount2(scratch.path, Int32(MNT_DETACH))
        return true
        #else
        return false
        #endif
    }()

    @Test(.enabled(if: canMount, "needs Linux and root to mount a small tmpfs"))
    func aFullDiskGivesIOAndKeepsTheOldObject() async throws {
        #if os(Linux)
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        #expect(mount("tmpfs", scratch.path, "tmpfs", 0, "size=64k,mode=0700") == 0)
        defer { umount2(scratch.path, Int32(MNT_DETACH)) }
        let store = try ObjectStore<Note>(url: scratch.child("store"))
        let first = Note(title: "old")
        try await store.save(first)
        var saved = [first]
        var failure: StorageError?

        for index in 0..<200 {
            let note = Note(title: "filler \(index)", body: String(repeating: "x", count: 2_000))
            do throws(StorageError) {
                try await store.save(note)
                saved.append(note)
            } catch {
                failure = error
                break
            }
        }
        let overwrite = await #expect(throws: StorageError.self) {
            try await store.save(Note(id: first.id, title: "new", body: String(repeating: "y", count: 60_000)))
        }

        #expect(failure?.code == .io)
        #expect(failure?.message.contains("No space left") == true)
        #expect(overwrite?.code == .io)
        let reopened = try ObjectStore<Note>(url: scratch.child("store"))
        #expect(Set(try await reopened.all()) == Set(saved))
        #expect(!scratch.files().contains { $0.contains(".tmp-") })
        try await reopened.delete(withIDs: saved.dropFirst().map(\.id))
        try await reopened.save(Note(title: "fits again"))
        #expect(try await reopened.count == 2)
        #endif
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ObjectFolderTests {
    @Test(arguments: [Logger.Level.info, .debug])
    func aSkippedObjectIsLoggedOnceWithItsIDOnlyAtDebug(_ level: Logger.Level) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let damaged = Note(title: "secret title")
        try await ObjectStore<Note>(url: scratch.url).save(contentsOf: [damaged, Note(title: "fine")])
        let path = try #require(scratch.files().first { $0.contains(damaged.id.uuidString) })
        try Data("{\"title\": \"secret".utf8).write(to: scratch.url.appendingPathComponent(path))
        let (logger, handler) = RecordingLogHandler.logger(level: level)
        let store = try ObjectStore<Note>(
            url: scratch.url,
            options: .init(skipsUnreadableObjects: true, logger: logger)
        )

        #expect(try await store.all().map(\.title) == ["fine"])
        #expect(try await store.count(matching: nil) == 1)  // from memory: no second load, no second log

        let entries = handler.entries
        #expect(entries.count == 1)
        #expect(entries.first?.level == .warning)
        #expect(entries.first?.metadata["reason"] == "corrupted")
        #expect(entries.first?.fullText.contains("secret") == false)
        #expect(entries.first?.fullText.contains(damaged.id.uuidString) == (level == .debug))
    }

    /// The read is timed from its own start, not from the test's: in a parallel run a test may
    /// wait its turn for the tests' threads for longer than any time limit (a `.timeLimit` of one
    /// minute failed here, at 70 s, with the read itself instant). A read that waited for a writer
    /// is released after 10 s by a watchdog that opens the FIFO for writing and closes it, so the
    /// test fails rather than hangs.
    @Test func aFIFOWhereAnObjectsFileShouldBeIsAnErrorNotAWaitForever() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let id = try #require(UUID(uuidString: "6273674B-F271-4521-9B74-F5656A1F815D"))
        let folder = try ObjectFolder(url: scratch.url)
        _ = try folder.setRecord(Data("{}".utf8), forKey: id.uuidString)
        let file = scratch.url.appendingPathComponent("62/73/\(id.uuidString).json").path
        try FileManager.default.removeItem(atPath: file)
        #expect(mkfifo(file, 0o600) == 0)

        let readFinished = DispatchSemaphore(value: 0)
        let watchdogFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if readFinished.wait(timeout: .now() + 10) == .timedOut {
                let writer = open(file, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            watchdogFinished.signal()
        }
        let started = ContinuousClock.now
        let error = #expect(throws: StorageError.self) { try folder.record(forKey: id.uuidString) }
        let elapsed = ContinuousClock.now - started
        readFinished.signal()
        watchdogFinished.wait()

        #expect(elapsed < .seconds(10), "the read took \(elapsed)")
        #expect(error?.code == .io)
        #expect(error?.key as? String == id.uuidString)
        #expect(FileManager.default.fileExists(atPath: file), "nothing is removed on a read")
    }
}
