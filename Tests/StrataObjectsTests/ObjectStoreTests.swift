import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

@Suite(.onTestThreads) struct ObjectStoreTests {
    @Test(arguments: BackendKind.allCases)
    func savedObjectIsFetchedByID(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "Good morning~", tags: ["greeting"], priority: 2, rating: 4.5)

        try await store.save(note)

        #expect(try await store.object(withID: note.id) == note)
        #expect(try await store.contains(id: note.id))
        #expect(try await store.count == 1)
        #expect(try await store.object(withID: UUID()) == nil)
    }

    /// Swift considers `"e\u{301}"` and `"\u{e9}"` one string, and so does every backend: they
    /// name one object and one attachment, and deleting everything leaves nothing behind.
    @Test(arguments: BackendKind.allCases)
    func idsAndAttachmentNamesThatSwiftConsidersEqualNameOneObject(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Tagged.self, in: scratch)
        let decomposed = "caf\u{65}\u{301}"
        let composed = "caf\u{e9}"

        try await store.save(Tagged(id: decomposed, value: 1))
        try await store.save(Tagged(id: composed, value: 2))
        try await store.setAttachment(Data([1]), named: "r\u{e9}sum\u{e9}", forObjectWithID: composed)
        try await store.setAttachment(Data([2]), named: "re\u{301}sume\u{301}", forObjectWithID: decomposed)

        #expect(try await store.count == 1)
        #expect(try await store.ids().count == 1)
        #expect(try await store.object(withID: decomposed)?.value == 2)
        #expect(try await store.attachmentNames(forObjectWithID: composed).count == 1)
        #expect(try await store.attachment(named: "r\u{e9}sum\u{e9}", forObjectWithID: decomposed) == Data([2]))
        let reopened = try backend == .memory ? store : backend.store(Tagged.self, in: scratch)
        #expect(try await reopened.count == 1)

        try await store.deleteAll()

        #expect(try await store.count == 0)
        #expect(try await store.object(withID: decomposed) == nil)
        if backend == .folder {
            #expect(scratch.files().filter { $0.hasSuffix(".json") && !$0.hasSuffix("strata-objects.json") }.isEmpty)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func updateChangesTheStoredObject(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "Good morning~")
        try await store.save(note)

        let updated = try await store.update(withID: note.id) { $0.title.append("!") }

        #expect(updated.title == "Good morning~!")
        #expect(try await store.object(withID: note.id)?.title == "Good morning~!")
    }

    @Test(arguments: BackendKind.allCases)
    func updateOfAMissingObjectThrowsNotFound(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)

        let error = await #expect(throws: StorageError.self) {
            try await store.update(withID: UUID()) { $0.title = "x" }
        }

        #expect(error?.code == .notFound)
        #expect(try await store.count == 0)
    }

    @Test(arguments: BackendKind.allCases)
    func throwingOrIDChangingUpdateWritesNothing(_ backend: BackendKind) async throws {
        struct Refusal: Error {}
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "kept")
        try await store.save(note)

        let thrown = await #expect(throws: StorageError.self) {
            try await store.update(withID: note.id) {
                $0.title = "lost"
                throw Refusal()
            }
        }
        let renamed = await #expect(throws: StorageError.self) {
            try await store.update(withID: note.id) { $0.id = UUID() }
        }

        #expect(thrown?.code == .updateAborted)
        #expect(thrown?.underlying is Refusal)
        #expect(renamed?.code == .updateAborted)
        #expect(try await store.object(withID: note.id) == note)
        #expect(try await store.count == 1)
    }

    @Test(arguments: BackendKind.allCases)
    func concurrentUpdatesLoseNothing(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "counter")
        try await store.save(note)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<500 {
                group.addTask { try await store.update(withID: note.id) { $0.counter += 1 } }
            }
            try await group.waitForAll()
        }

        #expect(try await store.object(withID: note.id)?.counter == 500)
    }

    @Test(arguments: BackendKind.allCases)
    func deleteRemovesTheObjectAndItsAttachments(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "doomed")
        let other = Note(title: "stays")
        try await store.save(contentsOf: [note, other])
        try await store.setAttachment(Data([0, 1, 2, 255]), named: "photo.jpg", forObjectWithID: note.id)

        #expect(try await store.delete(withID: note.id))
        #expect(try await !store.delete(withID: note.id))

        #expect(try await store.object(withID: note.id) == nil)
        #expect(try await store.attachment(named: "photo.jpg", forObjectWithID: note.id) == nil)
        #expect(try await store.all() == [other])
    }

    @Test(arguments: BackendKind.allCases)
    func attachmentsKeepArbitraryBytes(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let note = Note(title: "with blobs")
        try await store.save(note)
        let bytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

        try await store.setAttachment(bytes, named: "blob.bin", forObjectWithID: note.id)
        try await store.setAttachment(Data("text".utf8), named: "notes.txt", forObjectWithID: note.id)
        try await store.removeAttachment(named: "notes.txt", forObjectWithID: note.id)

        #expect(try await store.attachment(named: "blob.bin", forObjectWithID: note.id) == bytes)
        #expect(try await store.attachmentNames(forObjectWithID: note.id) == ["blob.bin"])
        let error = await #expect(throws: StorageError.self) {
            try await store.setAttachment(bytes, named: "x", forObjectWithID: UUID())
        }
        #expect(error?.code == .notFound)
    }

    @Test(arguments: BackendKind.allCases)
    func saveManyDeleteManyAndAll(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let notes = (0..<50).map { Note(title: "note \($0)", priority: $0) }

        try await store.save(contentsOf: notes)
        try await store.delete(withIDs: notes.prefix(20).map(\.id))

        #expect(try await store.count == 30)
        #expect(Set(try await store.all()) == Set(notes.dropFirst(20)))
        #expect(Set(try await store.ids()) == Set(notes.dropFirst(20).map(\.id)))
        try await store.deleteAll()
        #expect(try await store.count == 0)
    }

    @Test func reopeningAFolderGivesTheSameObjects() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        var generator = SystemRandomNumberGenerator()
        let notes = (0..<300).map { index in
            Note(
                title: "note \(index)",
                body: String(repeating: "é", count: Int.random(in: 0..<40, using: &generator)),
                tags: ["a", "b", "c"].filter { _ in Bool.random(using: &generator) },
                priority: Int.random(in: -5...5, using: &generator),
                rating: Bool.random(using: &generator) ? Double.random(in: 0...5, using: &generator) : nil
            )
        }
        do {
            let store = try ObjectStore<Note>(url: scratch.child("store"))
            try await store.save(contentsOf: notes)
        }

        let reopened = try ObjectStore<Note>(url: scratch.child("store"))

        #expect(try await reopened.count == notes.count)
        #expect(Set(try await reopened.all()) == Set(notes))
        for note in notes.prefix(20) {
            #expect(try await reopened.object(withID: note.id) == note)
        }
    }

    @Test func stringAndIntegerIDsWork() async throws {
        struct Numbered: Codable, Identifiable, Sendable, Equatable {
            var id: Int
            var name: String
        }
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let numbers = try ObjectStore<Numbered>(url: scratch.child("numbers"))
        let strings = try ObjectStore<Tagged>(url: scratch.child("strings"))

        try await numbers.save(Numbered(id: 42, name: "answer"))
        try await numbers.save(Numbered(id: -7, name: "negative"))
        try await strings.save(Tagged(id: "kharkiv", value: 1))

        let reopened = try ObjectStore<Numbered>(url: scratch.child("numbers"))
        #expect(Set(try await reopened.ids()) == [42, -7])
        #expect(try await reopened.object(withID: 42)?.name == "answer")
        #expect(try await strings.object(withID: "kharkiv")?.value == 1)
    }

    @Test func objectThatCannotBeEncodedThrowsAndWritesNothing() async throws {
        struct Unencodable: Codable, Identifiable, Sendable {
            var id = UUID()
            var value = Double.nan  // JSON has no NaN
        }
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try ObjectStore<Unencodable>(url: scratch.child("store"))

        let error = await #expect(throws: StorageError.self) { try await store.save(Unencodable()) }

        #expect(error?.code == .encodingFailed)
        #expect(try await store.count == 0)
    }
}
