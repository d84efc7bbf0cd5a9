import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

@Suite(.onTestThreads) struct ObjectArchiveTests {
    @Test func recordedObjectsAreAccessedFromMemoryThenDisk() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let note = Note(title: "kept")
        do {
            let archive = try ObjectArchive<Note>(url: scratch.url)
            try archive.record(note)
            #expect(try archive.object(withID: note.id) == note)
            #expect(archive.currentMemoryByteCount > 0)
        }

        let reopened = try ObjectArchive<Note>(url: scratch.url)

        #expect(reopened.currentMemoryByteCount == 0)
        #expect(try reopened.object(withID: note.id) == note)
        #expect(reopened.currentMemoryByteCount > 0)
        #expect(reopened.count == 1)
    }

    @Test func byteLimitsEvictTheLeastRecentlyAccessed() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let clock = ManualClock()
        let archive = try ObjectArchive<Note>(
            url: scratch.url,
            maximumMemoryByteCount: 2_000,
            maximumDiskByteCount: 6_000,
            clock: clock
        )
        let notes = (0..<10).map { Note(title: "note \($0)", body: String(repeating: "x", count: 900)) }

        for (index, note) in notes.enumerated() {
            try archive.record(note)
            clock.advance(by: .seconds(1))
            // Keep the first note in use, so it is never the least recently accessed.
            if index > 0 { _ = try archive.object(withID: notes[0].id) }
            #expect(archive.currentByteCount <= archive.maximumByteCount)
            #expect(archive.currentMemoryByteCount <= archive.maximumMemoryByteCount)
        }

        #expect(archive.maximumByteCount == 6_000)
        #expect(try archive.object(withID: notes[0].id) == notes[0])
        #expect(try archive.object(withID: notes[9].id) == notes[9])
        #expect(try archive.object(withID: notes[1].id) == nil)
        #expect(archive.count < 10)
    }

    @Test func listingMarksNothingAsUsedSoTheLeastRecentlyUsedStillGoesFirst() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let clock = ManualClock()
        let archive = try ObjectArchive<Note>(
            url: scratch.url,
            maximumMemoryByteCount: 2_000,
            maximumDiskByteCount: 6_000,
            clock: clock
        )
        let notes = (0..<5).map { Note(title: "note \($0)", body: String(repeating: "x", count: 900)) }
        for note in notes {
            try archive.record(note)
            clock.advance(by: .seconds(1))
        }
        #expect(archive.count == 5)
        let before = notes.map { archive.lastAccessDate(forID: $0.id) }

        let listed = try archive.objects()
        clock.advance(by: .seconds(1))
        try archive.record(Note(title: "newest", body: String(repeating: "x", count: 900)))

        #expect(listed.map(\.id) == notes.reversed().map(\.id), "most recently accessed first")
        #expect(archive.lastAccessDate(forID: notes[0].id) == nil, "the least recently used went first")
        #expect(notes.dropFirst().map { archive.lastAccessDate(forID: $0.id) } == Array(before.dropFirst()))
    }

    @Test func accessTimesOfObjectsTheDiskEvictedAreForgotten() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let archive = try ObjectArchive<Note>(url: scratch.url, maximumDiskByteCount: 6_000)

        for index in 0..<1_000 {
            try archive.record(Note(title: "note \(index)", body: String(repeating: "x", count: 900)))
            #expect(archive.accessTimeCount <= 2 * archive.count + 65)
        }

        #expect(archive.count <= 6)
    }

    @Test func accessTimesListingAndRemovingStaleObjects() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000_000))
        let archive = try ObjectArchive<Note>(url: scratch.url, clock: clock)
        let old = Note(title: "old")
        let recent = Note(title: "recent")
        let fresh = Note(title: "fresh")
        try archive.record(old)
        clock.advance(by: .seconds(3_600))
        try archive.record(recent)
        clock.advance(by: .seconds(60))
        try archive.record(fresh)
        clock.advance(by: .seconds(60))
        _ = try archive.object(withID: recent.id)

        #expect(archive.lastAccessDate(forID: old.id) == Date(timeIntervalSince1970: 1_000_000))
        #expect(archive.lastAccessDate(forID: recent.id) == Date(timeIntervalSince1970: 1_003_720))
        #expect(try archive.objects(limit: 2) == [recent, fresh])
        #expect(try archive.objects() == [recent, fresh, old])

        let removed = try archive.removeObjects(notAccessedWithin: .seconds(1_800))

        #expect(removed == 1)
        #expect(try archive.object(withID: old.id) == nil)
        #expect(archive.lastAccessDate(forID: old.id) == nil)
        #expect(Set(try archive.objects()) == [recent, fresh])
    }

    @Test func queriesDeleteAndDeleteAll() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let archive = try ObjectArchive<Note>(url: scratch.url)
        let notes = (0..<20).map { Note(title: $0 % 2 == 0 ? "premium \($0)" : "basic \($0)", priority: $0) }
        try archive.record(contentsOf: notes)

        let premium = try archive.objects(
            matching: #Predicate { $0.title.contains("premium") },
            sortedBy: [SortDescriptor(\.priority, order: .reverse)],
            limit: 3
        )
        try archive.delete(withID: notes[0].id)

        #expect(premium.map(\.priority) == [18, 16, 14])
        #expect(try archive.object(withID: notes[0].id) == nil)
        #expect(archive.count == 19)
        try archive.deleteAll()
        #expect(archive.count == 0)
        #expect(archive.currentByteCount == 0)
    }

    @Test func aDamagedFileReadsAsAbsent() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let note = Note(title: "x")
        try ObjectArchive<Note>(url: scratch.url).record(note)
        let files = scratch.files().filter { !$0.hasSuffix(".json") }
        for file in files {
            try Data("garbage".utf8).write(to: scratch.url.appendingPathComponent(file))
        }

        let reopened = try ObjectArchive<Note>(url: scratch.url)

        #expect(try reopened.object(withID: note.id) == nil)
    }
}
