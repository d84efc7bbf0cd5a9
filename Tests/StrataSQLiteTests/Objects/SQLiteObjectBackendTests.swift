import Foundation
import GRDB
import Strata
import StrataObjects
import StrataSQLite
import StrataSQLiteObjects
import StrataTestSupport
import Synchronization
import Testing

/// A note whose decodes are counted, to prove which queries decode which objects.
struct CountedNote: Codable, Identifiable, Sendable, Hashable {
    static let decodes = Atomic(0)

    var id = UUID()
    var title: String
    var priority: Int
    var rating: Double?
    var counter = 0

    init(id: UUID = UUID(), title: String, priority: Int, rating: Double? = nil, counter: Int = 0) {
        self.id = id
        self.title = title
        self.priority = priority
        self.rating = rating
        self.counter = counter
    }

    enum CodingKeys: String, CodingKey {
        case id, title, priority, rating, counter
    }

    init(from decoder: any Decoder) throws {
        Self.decodes.add(1, ordering: .relaxed)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        priority = try container.decode(Int.self, forKey: .priority)
        rating = try container.decodeIfPresent(Double.self, forKey: .rating)
        counter = try container.decode(Int.self, forKey: .counter)
    }

    static let indexes: [ObjectIndex<CountedNote>] = [
        .init("priority", \.priority), .init("title", \.title), .init("rating", \.rating),
    ]
}

/// An object with a `String` ID, for hostile IDs.
struct Tagged: Codable, Identifiable, Sendable, Hashable {
    var id: String
    var value: Int
}

/// SQLiteObjectBackend under an ObjectStore: the store's behaviour, attachments, hostile IDs,
/// damaged files, and indexed queries answered by SQL.
@Suite(.serialized, .onTestThreads) struct SQLiteObjectBackendTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    func store(
        _ name: String = "objects.sqlite",
        keepsObjectsInMemory: Bool = true
    ) throws -> ObjectStore<CountedNote> {
        let backend = try SQLiteObjectBackend<CountedNote>(path: folder.path(name), indexes: CountedNote.indexes)
        return ObjectStore(backend: backend, options: .init(keepsObjectsInMemory: keepsObjectsInMemory))
    }

    @Test func savedObjectsAreFetchedUpdatedAndDeleted() async throws {
        let store = try store()
        let note = CountedNote(title: "Good morning~", priority: 2)
        let other = CountedNote(title: "stays", priority: 1)

        try await store.save(contentsOf: [note, other])
        let updated = try await store.update(withID: note.id) { $0.title.append("!") }
        let reopened = try self.store()

        #expect(updated.title == "Good morning~!")
        #expect(try await reopened.object(withID: note.id) == updated)
        #expect(try await reopened.count == 2)
        #expect(try await reopened.delete(withID: note.id))
        #expect(try await !reopened.delete(withID: note.id))
        #expect(try await reopened.all() == [other])
        #expect(try await reopened.objects(indexed: "title") == [other])
    }

    @Test func concurrentUpdatesLoseNothing() async throws {
        let store = try store()
        let note = CountedNote(title: "counter", priority: 0)
        try await store.save(note)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask { try await store.update(withID: note.id) { $0.counter += 1 } }
            }
            try await group.waitForAll()
        }

        #expect(try await store.object(withID: note.id)?.counter == 200)
        #expect(try await self.store(keepsObjectsInMemory: false).object(withID: note.id)?.counter == 200)
    }

    @Test func attachmentsKeepArbitraryBytesAndGoWithTheObject() async throws {
        let store = try store()
        let note = CountedNote(title: "with blobs", priority: 1)
        try await store.save(note)
        let bytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

        try await store.setAttachment(bytes, named: "blob.bin", forObjectWithID: note.id)
        try await store.setAttachment(Data("text".utf8), named: "notes.txt", forObjectWithID: note.id)
        try await store.removeAttachment(named: "notes.txt", forObjectWithID: note.id)

        #expect(try await store.attachment(named: "blob.bin", forObjectWithID: note.id) == bytes)
        #expect(try await store.attachmentNames(forObjectWithID: note.id) == ["blob.bin"])
        try await store.delete(withID: note.id)
        #expect(try await store.attachment(named: "blob.bin", forObjectWithID: note.id) == nil)
        #expect(try await store.attachmentNames(forObjectWithID: note.id).isEmpty)
    }

    @Test(arguments: [
        "'); DROP TABLE strata_objects; --", "\" OR 1=1 --", "a'b\"c`d", "%_*", "naïve/..\\x", "\u{0}nul", "😀",
    ])
    func hostileIDsAreStoredVerbatim(_ id: String) async throws {
        let backend = try SQLiteObjectBackend<Tagged>(
            path: folder.path("hostile.sqlite"),
            indexes: [.init("'); DROP TABLE x; --", \.id), .init("value", \.value)]
        )
        let store = ObjectStore<Tagged>(backend: backend)

        try await store.save(Tagged(id: id, value: 7))
        try await store.setAttachment(Data([1, 2]), named: id, forObjectWithID: id)

        let reopened = ObjectStore<Tagged>(backend: backend, options: .init(keepsObjectsInMemory: false))
        #expect(try await reopened.object(withID: id) == Tagged(id: id, value: 7))
        #expect(try await reopened.ids() == [id])
        #expect(
            try await reopened.objects(indexed: "'); DROP TABLE x; --", .equal(.text(id))) == [Tagged(id: id, value: 7)]
        )
        #expect(try await reopened.attachment(named: id, forObjectWithID: id) == Data([1, 2]))
        #expect(try await reopened.delete(withID: id))
        #expect(try await reopened.count == 0)
    }

    @Test func aFileOfGarbageIsReportedAsCorruptedAtOpen() throws {
        let path = folder.path("garbage.sqlite")
        try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: path))

        let error = #expect(throws: StorageError.self) {
            try SQLiteObjectBackend<CountedNote>(path: path, indexes: CountedNote.indexes)
        }

        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("not a SQLite database") == true)
    }

    @Test func duplicateIndexNamesAreRefused() throws {
        let error = #expect(throws: StorageError.self) {
            try SQLiteObjectBackend<CountedNote>(
                path: folder.path("duplicate.sqlite"),
                indexes: [.init("p", \.priority), .init("p", \.title)]
            )
        }

        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aQueryOnAnUndeclaredIndexThrows() async throws {
        let store = try store()

        let error = await #expect(throws: StorageError.self) {
            try await store.objects(indexed: "counter", .equal(1))
        }

        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aRecordThatDoesNotDecodeIsRefusedAndNothingIsWritten() async throws {
        let backend = try SQLiteObjectBackend<CountedNote>(
            path: folder.path("undecodable.sqlite"),
            indexes: [.init("p", \.priority)]
        )

        let error = await #expect(throws: StorageError.self) {
            try await backend.setRecord(Data("{\"priority\": \"high\"".utf8), forKey: "k")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "k")
        #expect(error?.message.contains("cannot be indexed") == true)
        #expect(try await backend.record(forKey: "k") == nil)
    }

    @Test func aLimitOfZeroOrLessFindsNothing() async throws {
        let backend = try SQLiteObjectBackend<CountedNote>(
            path: folder.path("limit.sqlite"),
            indexes: CountedNote.indexes
        )
        try await ObjectStore(backend: backend).save(CountedNote(title: "one", priority: 1))

        let none = try await backend.keys(matching: IndexQuery("priority", limit: 0))
        let negative = try await backend.keys(matching: IndexQuery("priority", limit: -3))
        let all = try await backend.keys(matching: IndexQuery("priority"))

        #expect(none.isEmpty)
        #expect(negative.isEmpty)
        #expect(all.count == 1)
    }

    @Test func aStoreWithoutAnIndexingBackendRefusesIndexedQueries() async throws {
        let store = ObjectStore<CountedNote>.inMemory()

        let error = await #expect(throws: StorageError.self) {
            try await store.objects(indexed: "priority", .equal(1))
        }

        #expect(error?.code == .unsupported)
    }

    // MARK: Indexed queries

    /// 1,200 random notes, with priorities 0...9, ratings that are sometimes absent, and titles
    /// that collide.
    static func randomNotes(count: Int = 1_200) -> [CountedNote] {
        var generator = SystemRandomNumberGenerator()
        let words = ["alpha", "beta", "gamma", "delta", "Émile", "zeta", "a'b", "10", "9"]
        return (0..<count).map { _ in
            CountedNote(
                title: words.randomElement(using: &generator) ?? "alpha",
                priority: Int.random(in: 0...9, using: &generator),
                rating: Bool.random(using: &generator) ? Double(Int.random(in: 0...20, using: &generator)) / 4 : nil
            )
        }
    }

    /// What an indexed query must return, computed in memory.
    static func expected(
        _ notes: [CountedNote],
        _ index: ObjectIndex<CountedNote>,
        _ query: IndexQuery
    ) -> [UUID] {
        let matching = notes.compactMap { note in
            index.value(of: note).flatMap { query.condition.matches($0) ? (value: $0, note: note) : nil }
        }
        let sorted = matching.sorted { left, right in
            if left.value != right.value {
                return query.order == .ascending ? left.value < right.value : left.value > right.value
            }
            return left.note.id.uuidString < right.note.id.uuidString
        }
        let ids = sorted.map(\.note.id)
        return query.limit.map { Array(ids.prefix($0)) } ?? ids
    }

    static let queries: [IndexQuery] = [
        IndexQuery("priority", .equal(3)),
        IndexQuery("priority", .greaterThan(2)),
        IndexQuery("priority", .greaterThanOrEqual(7), order: .descending),
        IndexQuery("priority", .lessThan(2), limit: 17),
        IndexQuery("priority", .lessThanOrEqual(4.5), order: .descending, limit: 40),
        IndexQuery("priority", .between(2, 5)),
        IndexQuery("priority", .any, order: .descending, limit: 100),
        IndexQuery("title", .equal("a'b")),
        IndexQuery("title", .greaterThan("delta")),
        IndexQuery("title", .between("9", "beta")),
        IndexQuery("rating", .between(1.25, 3)),
        IndexQuery("rating", .any),
        IndexQuery("rating", .lessThan(2), order: .descending, limit: 5),
    ]

    @Test func indexedQueriesEqualFilteringInMemoryAndDecodeOnlyTheirResults() async throws {
        let notes = Self.randomNotes()
        try await self.store().save(contentsOf: notes)
        let store = try self.store(keepsObjectsInMemory: false)

        for query in Self.queries {
            let index = try #require(CountedNote.indexes.first { $0.name == query.index })
            let decodesBefore = CountedNote.decodes.load(ordering: .relaxed)

            let found = try await store.objects(matching: query)

            let decoded = CountedNote.decodes.load(ordering: .relaxed) - decodesBefore
            #expect(found.map(\.id) == Self.expected(notes, index, query), "\(query)")
            #expect(decoded == found.count, "\(query) decoded \(decoded) objects for \(found.count) results")
            #expect(found.count < notes.count)
        }
    }

    @Test func countingAnIndexDecodesNothing() async throws {
        let notes = Self.randomNotes(count: 300)
        try await self.store().save(contentsOf: notes)
        let store = try self.store(keepsObjectsInMemory: false)
        let decodesBefore = CountedNote.decodes.load(ordering: .relaxed)

        let count = try await store.count(indexed: "priority", .greaterThan(4))

        #expect(CountedNote.decodes.load(ordering: .relaxed) == decodesBefore)
        #expect(count == notes.filter { $0.priority > 4 }.count)
    }

    @Test func indexesFollowUpdatesAndDeletes() async throws {
        let store = try store()
        let note = CountedNote(title: "moving", priority: 1)
        let other = CountedNote(title: "still", priority: 1)
        try await store.save(contentsOf: [note, other])

        try await store.update(withID: note.id) { $0.priority = 9 }
        try await store.delete(withID: other.id)

        #expect(try await store.objects(indexed: "priority", .equal(1)).isEmpty)
        #expect(
            try await store.objects(indexed: "priority", .equal(9)) == [
                try #require(try await store.object(withID: note.id))
            ]
        )
        #expect(try await store.count(indexed: "title") == 1)
    }

    @Test func anIndexDeclaredLaterIsFilledFromExistingRecordsWhenOpened() async throws {
        let path = folder.path("later.sqlite")
        let notes = Self.randomNotes(count: 100)
        let plain = ObjectStore<CountedNote>(backend: try SQLiteObjectBackend<CountedNote>(path: path))
        try await plain.save(contentsOf: notes)

        let indexed = ObjectStore<CountedNote>(
            backend: try SQLiteObjectBackend<CountedNote>(path: path, indexes: [.init("priority", \.priority)])
        )

        let found = try await indexed.objects(indexed: "priority", .equal(5))
        #expect(Set(found.map(\.id)) == Set(notes.filter { $0.priority == 5 }.map(\.id)))
    }

    @Test func twoVersionsOfAnAppOnOneFileKeepEachOthersIndexesRight() async throws {
        let path = folder.path("versions.sqlite")
        var notes = Self.randomNotes(count: 200)
        let newer = try SQLiteObjectBackend<CountedNote>(
            path: path,
            indexes: [.init("priority", \.priority), .init("title", \.title)]
        )
        try await ObjectStore<CountedNote>(backend: newer).save(contentsOf: notes)
        // An older version opens the same file, knowing only the priority index, and changes
        // titles, adds notes and deletes some.
        let older = try SQLiteObjectBackend<CountedNote>(path: path, indexes: [.init("priority", \.priority)])
        let olderStore = ObjectStore<CountedNote>(backend: older)
        for index in stride(from: 0, to: 60, by: 3) {
            notes[index].title = "renamed"
            notes[index].priority = 9
            try await olderStore.save(notes[index])
        }
        let added = Self.randomNotes(count: 20).map { note in
            var note = note
            note.title = "added"
            return note
        }
        try await olderStore.save(contentsOf: added)
        for note in notes.suffix(10) {
            try await olderStore.delete(withID: note.id)
        }
        notes = Array(notes.dropLast(10)) + added
        let newerStore = ObjectStore<CountedNote>(backend: newer)

        for query in [
            IndexQuery("title", .equal("renamed")), IndexQuery("title", .equal("added")), IndexQuery("title", .any),
            IndexQuery("title", .between("a", "e")),
        ] {
            let found = try await newerStore.objects(matching: query)
            #expect(found.map(\.id) == Self.expected(notes, CountedNote.indexes[1], query), "\(query)")
        }
        let urgent = IndexQuery("priority", .equal(9))
        #expect(
            try await olderStore.objects(matching: urgent).map(\.id)
                == Self.expected(notes, CountedNote.indexes[0], urgent)
        )
        #expect(
            try await newerStore.objects(matching: urgent).map(\.id)
                == Self.expected(notes, CountedNote.indexes[0], urgent)
        )

        // A new opener of the newer version catches up when it opens; the pending list empties.
        try await olderStore.save(CountedNote(title: "late", priority: 0))
        let reopened = try SQLiteObjectBackend<CountedNote>(
            path: path,
            indexes: [.init("priority", \.priority), .init("title", \.title)]
        )
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let pending = try await queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM strata_object_index_pending")
        }
        #expect(pending == 0)
        #expect(try await ObjectStore<CountedNote>(backend: reopened).count(indexed: "title", .equal("late")) == 1)
    }

    @Test func undeclaredIndexesAreDroppedOnlyWhenAsked() async throws {
        let path = folder.path("drop.sqlite")
        let notes = Self.randomNotes(count: 50)
        let newer = try SQLiteObjectBackend<CountedNote>(path: path, indexes: CountedNote.indexes)
        try await ObjectStore<CountedNote>(backend: newer).save(contentsOf: notes)
        let older = try SQLiteObjectBackend<CountedNote>(path: path, indexes: [.init("priority", \.priority)])

        #expect(try await older.dropUndeclaredIndexes() == ["rating", "title"])
        #expect(try await older.dropUndeclaredIndexes() == [])

        // The newer version, opening again, fills the indexes anew from the records.
        let reopened = ObjectStore<CountedNote>(
            backend: try SQLiteObjectBackend<CountedNote>(path: path, indexes: CountedNote.indexes)
        )
        let query = IndexQuery("title", .any)
        #expect(
            try await reopened.objects(matching: query).map(\.id) == Self.expected(notes, CountedNote.indexes[1], query)
        )
    }

    /// An index name that is not a name (planted in the file by hand, or by another program) is
    /// dropped like any other: names only ever reach SQLite as bound values.
    @Test func aHostileUndeclaredIndexNameIsDroppedAndHarmsNothing() async throws {
        let path = folder.path("hostile.sqlite")
        let backend = try SQLiteObjectBackend<CountedNote>(path: path, indexes: [.init("priority", \.priority)])
        let store = ObjectStore<CountedNote>(backend: backend)
        let notes = Self.randomNotes(count: 20)
        try await store.save(contentsOf: notes)
        let hostile = "x'); DROP TABLE strata_objects; --"
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO strata_object_indexes (name) VALUES (?)", arguments: [hostile])
        }
        try queue.close()

        let dropped = try await backend.dropUndeclaredIndexes()

        #expect(dropped == [hostile])
        #expect(try await store.count() == notes.count, "every record is still there")
        #expect(try await backend.dropUndeclaredIndexes() == [])
    }

    @Test func droppingIndexesOfAClosedBackendIsAClearError() async throws {
        let backend = try SQLiteObjectBackend<CountedNote>(
            path: folder.path("closed.sqlite"),
            indexes: CountedNote.indexes
        )
        try backend.close()

        let error = await #expect(throws: StorageError.self) {
            try await backend.dropUndeclaredIndexes()
        }

        #expect(error?.code == .closed, "\(String(describing: error))")
    }

    @Test func indexedQueriesReadTheIndexNotTheRecords() async throws {
        let path = folder.path("plan.sqlite")
        let store = ObjectStore<CountedNote>(
            backend: try SQLiteObjectBackend<CountedNote>(path: path, indexes: CountedNote.indexes)
        )
        try await store.save(contentsOf: Self.randomNotes(count: 50))
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }

        let plan = try await queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    EXPLAIN QUERY PLAN SELECT key FROM strata_object_index_values
                    WHERE name = ? AND value > ? ORDER BY value, key LIMIT ?
                    """,
                arguments: ["priority", 3, 10]
            ).map { $0["detail"] as String }
        }

        #expect(plan.contains { $0.contains("strata_object_index_order") }, "\(plan)")
        #expect(!plan.contains { $0.contains("strata_objects") && !$0.contains("index") }, "\(plan)")
    }
}
