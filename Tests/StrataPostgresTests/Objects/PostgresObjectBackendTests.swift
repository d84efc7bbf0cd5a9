#if Postgres
import Foundation
import PostgresNIO
import Strata
import StrataObjects
import Synchronization
import Testing

@testable import StrataPostgres
@testable import StrataPostgresObjects

/// A note with indexed properties.
struct IndexedNote: Codable, Identifiable, Sendable, Hashable {
    var id = UUID()
    var title: String
    var priority: Int
    var rating: Double?
    var counter = 0

    static let indexes: [ObjectIndex<IndexedNote>] = [
        .init("priority", \.priority), .init("title", \.title), .init("rating", \.rating),
    ]
}

/// A note whose decodes are counted, to prove an indexed query decodes only its results.
struct CountedIndexedNote: Codable, Identifiable, Sendable, Hashable {
    static let decodes = Atomic(0)

    var id = UUID()
    var priority: Int

    init(priority: Int) {
        self.priority = priority
    }

    enum CodingKeys: String, CodingKey {
        case id, priority
    }

    init(from decoder: any Decoder) throws {
        Self.decodes.add(1, ordering: .relaxed)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        priority = try container.decode(Int.self, forKey: .priority)
    }
}

/// An object with a `String` ID, for hostile IDs.
struct TaggedObject: Codable, Identifiable, Sendable, Hashable {
    var id: String
    var value: Int
}

/// PostgresObjectBackend under an ObjectStore on the real server: JSONB records, attachments,
/// hostile IDs as bound parameters, concurrent updates, and indexed queries answered by SQL.
///
/// Needs `STRATA_POSTGRES_URL`; without it every test fails and says so.
@Suite struct PostgresObjectBackendTests {
    /// Runs `body` with a backend on fresh tables, then drops them and closes the storage.
    func withBackend<Object: Decodable & Sendable>(
        _: Object.Type,
        indexes: [ObjectIndex<Object>] = [],
        _ body: (PostgresObjectBackend<Object>) async throws -> Void
    ) async throws {
        let storage = try await PostgresTestServer.storage()
        let table = PostgresTestServer.uniqueTable() + "_objects"
        do {
            let backend = try await PostgresObjectBackend<Object>(storage: storage, table: table, indexes: indexes)
            try await body(backend)
        } catch {
            await drop(table, storage)
            throw error
        }
        await drop(table, storage)
    }

    func drop(_ table: String, _ storage: PostgresStorage) async {
        _ = try? await storage.perform("drop", key: nil) { connection in
            try await connection.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: PostgresStorage.logger)
            try await connection.query(
                "DROP TABLE IF EXISTS \(unescaped: table)_attachments",
                logger: PostgresStorage.logger
            )
            try await connection.query(
                "DROP TABLE IF EXISTS \(unescaped: table)_indexes",
                logger: PostgresStorage.logger
            )
            try await connection.query(
                "DROP TABLE IF EXISTS \(unescaped: table)_index_pending",
                logger: PostgresStorage.logger
            )
        }
        await PostgresTestServer.dispose(storage)
    }

    @Test func savedObjectsAreFetchedUpdatedAndDeletedAsJSONB() async throws {
        try await withBackend(IndexedNote.self) { backend in
            let store = ObjectStore<IndexedNote>(backend: backend)
            let note = IndexedNote(title: "Good morning~", priority: 2)
            let other = IndexedNote(title: "stays", priority: 1)

            try await store.save(contentsOf: [note, other])
            let updated = try await store.update(withID: note.id) { $0.title.append("!") }
            let fresh = ObjectStore<IndexedNote>(backend: backend, options: .init(keepsObjectsInMemory: false))

            #expect(try await fresh.object(withID: note.id) == updated)
            #expect(try await fresh.count == 2)
            let type = try await backend.storage.perform("type", key: nil) { [table = backend.table] connection in
                let rows = try await connection.query(
                    "SELECT jsonb_typeof(data), data->>'title' FROM \(unescaped: table) WHERE data->>'priority' = '2'",
                    logger: PostgresStorage.logger
                )
                var found: [String] = []
                for try await (type, title) in rows.decode((String, String).self) { found += [type, title] }
                return found
            }
            #expect(type == ["object", "Good morning~!"])
            #expect(try await fresh.delete(withID: note.id))
            #expect(try await !fresh.delete(withID: note.id))
            #expect(try await fresh.all() == [other])
        }
    }

    @Test func concurrentUpdatesLoseNothing() async throws {
        try await withBackend(IndexedNote.self, indexes: IndexedNote.indexes) { backend in
            let store = ObjectStore<IndexedNote>(backend: backend)
            let note = IndexedNote(title: "counter", priority: 0)
            try await store.save(note)

            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask { try await store.update(withID: note.id) { $0.counter += 1 } }
                }
                try await group.waitForAll()
            }

            let fresh = ObjectStore<IndexedNote>(backend: backend, options: .init(keepsObjectsInMemory: false))
            #expect(try await fresh.object(withID: note.id)?.counter == 200)
        }
    }

    @Test func attachmentsKeepArbitraryBytesAndGoWithTheObject() async throws {
        try await withBackend(IndexedNote.self) { backend in
            let store = ObjectStore<IndexedNote>(backend: backend)
            let note = IndexedNote(title: "with blobs", priority: 1)
            try await store.save(note)
            let bytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

            try await store.setAttachment(bytes, named: "blob.bin", forObjectWithID: note.id)
            try await store.setAttachment(Data("text".utf8), named: "notes.txt", forObjectWithID: note.id)
            try await store.removeAttachment(named: "notes.txt", forObjectWithID: note.id)

            #expect(try await store.attachment(named: "blob.bin", forObjectWithID: note.id) == bytes)
            #expect(try await store.attachmentNames(forObjectWithID: note.id) == ["blob.bin"])
            try await store.delete(withID: note.id)
            #expect(try await backend.attachmentNames(forKey: note.id.uuidString).isEmpty)
        }
    }

    /// Keys and names Swift considers equal name one row; a row and an attachment that a version
    /// which kept keys as given stored under the decomposed spelling are read by either spelling,
    /// and the next write moves them to the stored (NFC) one.
    @Test func keysSwiftConsidersEqualNameOneRecordAndEarlierSpellingsMove() async throws {
        try await withBackend(IndexedNote.self) { backend in
            let decomposed = "caf\u{65}\u{301}"
            let composed = "caf\u{e9}"
            let first = String(
                decoding: try JSONEncoder().encode(IndexedNote(title: "first", priority: 1)),
                as: UTF8.self
            )
            let second = try JSONEncoder().encode(IndexedNote(title: "second", priority: 2))
            try await backend.storage.perform("write as an earlier version", key: nil) {
                [table = backend.table] connection in
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table) (key, data, indexes)
                    VALUES (\(Data(decomposed.utf8)), \(first)::jsonb, '{}'::jsonb)
                    """,
                    logger: PostgresStorage.logger
                )
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table)_attachments (key, name, data)
                    VALUES (\(Data(decomposed.utf8)), \(Data("re\u{301}sume\u{301}".utf8)), \(Data([7])))
                    """,
                    logger: PostgresStorage.logger
                )
            }
            func title(_ key: String) async throws -> String? {
                try await backend.record(forKey: key).map { try JSONDecoder().decode(IndexedNote.self, from: $0).title }
            }

            #expect(try await title(composed) == "first")
            #expect(try await backend.attachment(named: "r\u{e9}sum\u{e9}", forKey: composed) == Data([7]))

            #expect(try await backend.setRecord(second, forKey: composed))

            #expect(try await backend.keys().map { Array($0.utf8) } == [Array(composed.utf8)])
            #expect(try await title(decomposed) == "second")
            let names = try await backend.attachmentNames(forKey: decomposed)
            #expect(names.map { Array($0.utf8) } == [Array("r\u{e9}sum\u{e9}".utf8)])
            try await backend.setAttachment(Data([8]), named: "re\u{301}sume\u{301}", forKey: decomposed)
            #expect(try await backend.attachmentNames(forKey: composed).count == 1)
            #expect(try await backend.attachment(named: "r\u{e9}sum\u{e9}", forKey: composed) == Data([8]))

            #expect(try await backend.removeRecord(forKey: decomposed))
            #expect(try await backend.keys().isEmpty)
            #expect(try await backend.attachmentNames(forKey: composed).isEmpty)
        }
    }

    @Test func sqlLookingIDsAndNamesAreOnlyBoundParameters() async throws {
        let ids = [
            "'); DROP TABLE x; --", "\" OR 1=1 --", "a'b\"c`d", "$1", "%_*", "naïve/..\\x", "😀",
            "'; TRUNCATE pg_class; --",
        ]
        try await withBackend(
            TaggedObject.self,
            indexes: [.init("'); DROP TABLE x; --", \.id), .init("value", \.value)]
        ) { backend in
            let store = ObjectStore<TaggedObject>(backend: backend, options: .init(keepsObjectsInMemory: false))

            for (value, id) in ids.enumerated() {
                try await store.save(TaggedObject(id: id, value: value))
                try await store.setAttachment(Data([1, 2]), named: id, forObjectWithID: id)
            }

            #expect(Set(try await store.ids()) == Set(ids))
            for (value, id) in ids.enumerated() {
                #expect(try await store.object(withID: id) == TaggedObject(id: id, value: value))
                #expect(
                    try await store.objects(indexed: "'); DROP TABLE x; --", .equal(.text(id))) == [
                        TaggedObject(id: id, value: value)
                    ]
                )
                #expect(try await store.attachment(named: id, forObjectWithID: id) == Data([1, 2]))
            }
            #expect(try await store.delete(withID: ids[0]))
            #expect(try await store.count == ids.count - 1)
        }
    }

    @Test func indexedQueriesEqualFilteringInMemory() async throws {
        var generator = SystemRandomNumberGenerator()
        let words = ["alpha", "beta", "gamma", "Émile", "a'b", "10", "9", "Zeta"]
        let notes = (0..<1_000).map { _ in
            IndexedNote(
                title: words.randomElement(using: &generator) ?? "alpha",
                priority: Int.random(in: 0...9, using: &generator),
                rating: Bool.random(using: &generator) ? Double(Int.random(in: 0...20, using: &generator)) / 4 : nil
            )
        }
        let queries: [IndexQuery] = [
            IndexQuery("priority", .equal(3)),
            IndexQuery("priority", .greaterThan(2)),
            IndexQuery("priority", .greaterThanOrEqual(7), order: .descending),
            IndexQuery("priority", .lessThan(2), limit: 17),
            IndexQuery("priority", .lessThanOrEqual(4.5), order: .descending, limit: 40),
            IndexQuery("priority", .between(2, 5)),
            IndexQuery("priority", .any, order: .descending, limit: 100),
            IndexQuery("title", .equal("a'b")),
            IndexQuery("title", .greaterThan("Zeta")),
            IndexQuery("title", .between("9", "beta")),
            IndexQuery("title", .greaterThan(5)),
            IndexQuery("rating", .between(1.25, 3)),
            IndexQuery("rating", .any),
            IndexQuery("rating", .lessThan(2), order: .descending, limit: 5),
        ]
        try await withBackend(IndexedNote.self, indexes: IndexedNote.indexes) { backend in
            try await ObjectStore<IndexedNote>(backend: backend).save(contentsOf: notes)
            let store = ObjectStore<IndexedNote>(backend: backend, options: .init(keepsObjectsInMemory: false))

            for query in queries {
                let index = try #require(IndexedNote.indexes.first { $0.name == query.index })
                let matching = notes.compactMap { note in
                    index.value(of: note).flatMap { query.condition.matches($0) ? (value: $0, note: note) : nil }
                }
                let sorted = matching.sorted { left, right in
                    if left.value != right.value {
                        return query.order == .ascending ? left.value < right.value : left.value > right.value
                    }
                    return left.note.id.uuidString < right.note.id.uuidString
                }
                let expected = query.limit.map { Array(sorted.prefix($0)) } ?? sorted

                let found = try await store.objects(matching: query)

                #expect(found.map(\.id) == expected.map(\.note.id), "\(query)")
            }
        }
    }

    @Test func aRecordThatDoesNotDecodeAnUnknownIndexAndRepeatedNamesAreRefused() async throws {
        try await withBackend(IndexedNote.self, indexes: IndexedNote.indexes) { backend in
            let id = UUID().uuidString
            let decodeError = await #expect(throws: StorageError.self) {
                try await backend.setRecord(Data("{\"title\": 3".utf8), forKey: id)
            }
            #expect(decodeError?.code == .decodingFailed)
            #expect(decodeError?.message.contains("cannot be indexed") == true)
            let stored = try await backend.record(forKey: id)
            #expect(stored == nil, "nothing was written")

            let queryError = await #expect(throws: StorageError.self) {
                try await backend.keys(matching: IndexQuery("missing", .equal(1)))
            }
            #expect(queryError?.code == .invalidConfiguration)
            #expect(queryError?.message.contains("no index named 'missing'") == true)
        }
        let storage = try await PostgresTestServer.storage()
        let repeated = await #expect(throws: StorageError.self) {
            try await PostgresObjectBackend<IndexedNote>(
                storage: storage,
                table: PostgresTestServer.uniqueTable() + "_objects",
                indexes: [.init("p", \.priority), .init("p", \.title)]
            )
        }
        #expect(repeated?.code == .invalidConfiguration)
    }

    @Test func anIndexedQueryDecodesOnlyItsResults() async throws {
        let notes = (0..<300).map { CountedIndexedNote(priority: $0 % 10) }
        try await withBackend(CountedIndexedNote.self, indexes: [.init("priority", \.priority)]) { backend in
            try await ObjectStore<CountedIndexedNote>(backend: backend).save(contentsOf: notes)
            let store = ObjectStore<CountedIndexedNote>(backend: backend, options: .init(keepsObjectsInMemory: false))
            let before = CountedIndexedNote.decodes.load(ordering: .relaxed)

            let found = try await store.objects(indexed: "priority", .equal(7))
            let counted = try await store.count(indexed: "priority", .greaterThan(7))

            #expect(CountedIndexedNote.decodes.load(ordering: .relaxed) - before == found.count)
            #expect(Set(found) == Set(notes.filter { $0.priority == 7 }))
            #expect(counted == 60)
        }
    }

    @Test func anIndexDeclaredLaterIsFilledFromExistingRecords() async throws {
        let notes = (0..<50).map { IndexedNote(title: "n\($0)", priority: $0 % 5) }
        try await withBackend(IndexedNote.self, indexes: [.init("title", \.title)]) { backend in
            try await ObjectStore<IndexedNote>(backend: backend).save(contentsOf: notes)

            let reopened = try await PostgresObjectBackend<IndexedNote>(
                storage: backend.storage,
                table: backend.table,
                indexes: [.init("priority", \.priority)]
            )
            let store = ObjectStore<IndexedNote>(backend: reopened)

            let found = try await store.objects(indexed: "priority", .equal(3))
            #expect(Set(found) == Set(notes.filter { $0.priority == 3 }))
            // The title index, which the reopened backend does not declare, is kept for the
            // backend that does.
            let kept = try await backend.storage.perform("read", key: nil) { [table = backend.table] connection in
                let rows = try await connection.query(
                    "SELECT count(*)::bigint FROM \(unescaped: table) WHERE indexes ? 'title'",
                    logger: PostgresStorage.logger
                )
                var count = -1
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }
            #expect(kept == notes.count)
        }
    }

    @Test func twoVersionsOfAnAppOnOneTableKeepEachOthersIndexesRight() async throws {
        var notes = (0..<120).map { IndexedNote(title: "n\($0 % 7)", priority: $0 % 5) }
        try await withBackend(IndexedNote.self, indexes: [.init("priority", \.priority), .init("title", \.title)]) {
            newer in
            try await ObjectStore<IndexedNote>(backend: newer).save(contentsOf: notes)
            // An older version, knowing only the priority index, renames, adds and deletes.
            let older = try await PostgresObjectBackend<IndexedNote>(
                storage: newer.storage,
                table: newer.table,
                indexes: [.init("priority", \.priority)]
            )
            let olderStore = ObjectStore<IndexedNote>(backend: older)
            for index in stride(from: 0, to: 40, by: 4) {
                notes[index].title = "renamed"
                try await olderStore.save(notes[index])
            }
            let added = (0..<5).map { IndexedNote(title: "added", priority: $0) }
            try await olderStore.save(contentsOf: added)
            for note in notes.suffix(6) {
                try await olderStore.delete(withID: note.id)
            }
            notes = Array(notes.dropLast(6)) + added
            let newerStore = ObjectStore<IndexedNote>(backend: newer, options: .init(keepsObjectsInMemory: false))

            for title in ["renamed", "added", "n3"] {
                let found = try await newerStore.objects(indexed: "title", .equal(.text(title)))
                #expect(Set(found.map(\.id)) == Set(notes.filter { $0.title == title }.map(\.id)), "\(title)")
            }
            let urgent = try await olderStore.objects(indexed: "priority", .equal(4))
            #expect(Set(urgent.map(\.id)) == Set(notes.filter { $0.priority == 4 }.map(\.id)))

            // A newer backend created later catches up when it is created.
            try await olderStore.save(IndexedNote(title: "late", priority: 0))
            _ = try await PostgresObjectBackend<IndexedNote>(
                storage: newer.storage,
                table: newer.table,
                indexes: [.init("priority", \.priority), .init("title", \.title)]
            )
            let pending = try await newer.storage.perform("read", key: nil) { [table = newer.table] connection in
                let rows = try await connection.query(
                    "SELECT count(*)::bigint FROM \(unescaped: table)_index_pending",
                    logger: PostgresStorage.logger
                )
                var count = -1
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }
            #expect(pending == 0)
            #expect(try await newerStore.count(indexed: "title", .equal(.text("late"))) == 1)

            #expect(try await older.dropUndeclaredIndexes() == ["title"])
            #expect(try await older.dropUndeclaredIndexes() == [])
        }
    }

    @Test func aQueryOnAnIndexWithAPlainNameCanUseItsBTreeIndex() async throws {
        let notes = (0..<200).map { IndexedNote(title: "n\($0)", priority: $0 % 10) }
        try await withBackend(IndexedNote.self, indexes: IndexedNote.indexes) { backend in
            try await ObjectStore<IndexedNote>(backend: backend).save(contentsOf: notes)
            let btree = PostgresObjectBackend<IndexedNote>.btreeName(table: backend.table, index: "priority")
            let query = PostgresObjectBackend<IndexedNote>.statement(
                for: IndexQuery("priority", .equal(3), limit: 5),
                table: backend.table
            )

            let plan = try await backend.storage.perform("explain", key: nil) { connection in
                try await connection.withTransaction(logger: PostgresStorage.logger) { connection in
                    // The table is small enough for a scan to win; forbid it to see the index is usable.
                    try await connection.query("SET LOCAL enable_seqscan = off", logger: PostgresStorage.logger)
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds),
                        logger: PostgresStorage.logger
                    )
                    var lines: [String] = []
                    for try await line in rows.decode(String.self) { lines.append(line) }
                    return lines.joined(separator: "\n")
                }
            }

            #expect(plan.contains(btree), "\(plan)")
            let found = try await ObjectStore<IndexedNote>(backend: backend).objects(
                matching: IndexQuery("priority", .equal(3), limit: 5)
            )
            #expect(found.count == 5)
            #expect(found.allSatisfy { $0.priority == 3 })
        }
    }
}
#endif
