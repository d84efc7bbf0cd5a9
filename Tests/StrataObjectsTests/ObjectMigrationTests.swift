import Foundation
import Strata
import StrataCommandLine
import StrataSQLiteObjects
import StrataTestSupport
import Synchronization
import Testing

@testable import StrataObjects

/// Objects stored by one version of a type are read by the next: lazily on every read, and
/// rewritten by `migrate()`; on every embedded backend (PostgreSQL's test is with its backend's).
@Suite(.onTestThreads) struct ObjectMigrationTests {
    enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case folder, memory, sqlite

        var testDescription: String { rawValue }
    }

    /// One backend for the length of a test, opened as any version of the contact type.
    final class Place: Sendable {
        let kind: Backend
        let scratch: ScratchFolder
        let memory = StorageObjectBackend(MemoryStorage<String, Data>(), name: "memory")

        init(_ kind: Backend) throws {
            self.kind = kind
            scratch = try ScratchFolder()
        }

        deinit { scratch.remove() }

        func store<Object: Codable & Identifiable & Sendable>(
            _ type: Object.Type,
            indexes: [ObjectIndex<Object>] = [],
            keepsObjectsInMemory: Bool = true
        ) throws -> ObjectStore<Object> where Object.ID: Codable & Sendable {
            let options = ObjectStore<Object>.Options(keepsObjectsInMemory: keepsObjectsInMemory)
            switch kind {
            case .folder:
                return try ObjectStore(url: scratch.child("contacts"), options: options)
            case .memory:
                return ObjectStore(backend: memory, options: options)
            case .sqlite:
                let backend = try SQLiteObjectBackend<Object>(
                    path: scratch.url.appendingPathComponent("contacts.sqlite").path,
                    indexes: indexes
                )
                return ObjectStore(backend: backend, options: options)
            }
        }

        /// The stored bytes of `id`, as JSON.
        func storedJSON(_ id: String) async throws -> [String: JSONValue] {
            let data = try #require(try await store(ContactV1.self).backend.record(forKey: id))
            guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: data) else {
                Issue.record("\(id) is not a JSON object")
                return [:]
            }
            return object
        }

        /// Writes contacts 0..<count as version 1.
        func writeVersion1(_ count: Int) async throws {
            try await store(ContactV1.self).save(contentsOf: (0..<count).map(ContactV1.numbered))
        }
    }

    @Test(arguments: Backend.allCases)
    func version1ObjectsReadAsVersion2(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.writeVersion1(3)
        #expect(try await place.storedJSON("contact-1")["$schemaVersion"] == nil)

        for keeps in [true, false] {
            let store = try place.store(ContactV2.self, keepsObjectsInMemory: keeps)
            // Renamed (name → fullName), changed type (age "21" → 21), removed (fax), new without a default (email).
            #expect(
                try await store.object(withID: "contact-1")
                    == ContactV2(id: "contact-1", fullName: "Person 1", age: 21, email: "contact-1@example.com")
            )
            #expect(try await store.all().count == 3)
            let thirties = try await store.objects(matching: #Predicate { $0.age >= 21 })
            #expect(thirties.map(\.id).sorted() == ["contact-1", "contact-2"])
        }
        // A lazy read changes nothing stored.
        #expect(try await place.storedJSON("contact-1")["name"] == "Person 1")
        #expect(try await place.storedJSON("contact-1")["$schemaVersion"] == nil)
    }

    @Test(arguments: Backend.allCases)
    func aChainRunsFromEachStoredVersion(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.writeVersion1(2)
        let version2 = try place.store(ContactV2.self)
        try await version2.save(ContactV2(id: "written-at-2", fullName: "Grace", age: 45, email: "grace@example.com"))
        #expect(try await place.storedJSON("written-at-2")["$schemaVersion"] == 2)

        let store = try place.store(Contact.self)
        #expect(try await store.object(withID: "contact-0") == Contact.numbered(0))
        #expect(
            try await store.object(withID: "written-at-2")
                == Contact(id: "written-at-2", fullName: "Grace", age: 45, email: "grace@example.com", tags: [])
        )
        var saved = Contact.numbered(7)
        saved.tags = ["new"]
        try await store.save(saved)
        #expect(try await place.storedJSON("contact-7")["$schemaVersion"] == 3)
        #expect(try await store.object(withID: "contact-7") == saved)
    }

    @Test(arguments: Backend.allCases)
    func migrateRewritesOlderObjectsAndReportsProgress(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.writeVersion1(5)
        try await place.store(ContactV2.self).save(
            ContactV2(id: "at-2", fullName: "Grace", age: 45, email: "g@example.com")
        )
        let store = try place.store(Contact.self)
        let seen = Mutex<[MigrationProgress]>([])
        let report = try await store.migrate { progress in seen.withLock { $0.append(progress) } }

        #expect(report == MigrationReport(migrated: 6, alreadyCurrent: 0))
        #expect(seen.withLock { $0.map(\.completed) } == Array(1...6))
        #expect(seen.withLock { $0.allSatisfy { $0.total == 6 } })
        for n in 0..<5 {
            let stored = try await place.storedJSON("contact-\(n)")
            #expect(stored["$schemaVersion"] == 3)
            #expect(stored["fullName"] == .string("Person \(n)"))
            #expect(stored["name"] == nil && stored["fax"] == nil)
            #expect(try await store.object(withID: "contact-\(n)") == Contact.numbered(n))
        }
        #expect(try await place.storedJSON("at-2")["tags"] == [])
        #expect(try await store.migrate() == MigrationReport(migrated: 0, alreadyCurrent: 6))
    }

    @Test(arguments: Backend.allCases)
    func aFailedMigrationNamesTheObjectAndVersionAndLeavesItReadable(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.writeVersion1(3)
        let bad = ContactV1(id: "bad", name: "Nobody", age: "thirty", fax: "")
        try await place.store(ContactV1.self).save(bad)
        let store = try place.store(Contact.self, keepsObjectsInMemory: false)

        let error = try await #require(throws: StorageError.self) { try await store.object(withID: "bad") }
        #expect(error.code == .migrationFailed)
        #expect(error.key == "bad")
        #expect(error.message.contains("'bad'") && error.message.contains("version 1"))
        #expect(error.message.contains("'age' is 'thirty'"))

        let migration = try await #require(throws: StorageError.self) { try await store.migrate() }
        #expect(migration.code == .migrationFailed)
        #expect(migration.message.contains("1 of 4 objects could not be migrated"))
        #expect(migration.message.contains("3 were migrated"))
        // The others moved on; the failed one is as it was, and its old type still reads it.
        #expect(try await place.storedJSON("contact-2")["$schemaVersion"] == 3)
        #expect(try await place.store(ContactV1.self).object(withID: "bad") == bad)
    }

    @Test(arguments: Backend.allCases)
    func anObjectFromANewerVersionIsRefusedNotMisread(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.store(Contact.self).save(Contact.numbered(1))
        let older = try place.store(ContactV2.self, keepsObjectsInMemory: false)
        let error = try await #require(throws: StorageError.self) { try await older.object(withID: "contact-1") }
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("version 3") && error.message.contains("newer version"))
        #expect(try await place.storedJSON("contact-1")["$schemaVersion"] == 3)
    }

    /// What a store did before versions (and does for a type that declares none): the new shape
    /// does not decode from the old, and the error names the missing field.
    @Test func withoutAVersionTheNewShapeFailsToDecodeTheOld() async throws {
        struct Unversioned: Codable, Identifiable, Sendable {
            var id: String
            var fullName: String
            var age: Int
            var email: String
        }
        let place = try Place(.memory)
        try await place.writeVersion1(1)
        let store = try place.store(Unversioned.self, keepsObjectsInMemory: false)
        let error = try await #require(throws: StorageError.self) { try await store.object(withID: "contact-0") }
        #expect(error.code == .decodingFailed)
        #expect(error.message.contains("missing 'fullName'"))
    }

    /// Stored bytes a migration cannot trust: a version below 1 or not a number, an object that is
    /// not a JSON object, bytes that are not JSON. Each read fails with its own clear code, and
    /// `migrate()` migrates the sound objects, counts the others and leaves them as they were.
    @Test(arguments: Backend.allCases)
    func hostileStoredVersionsAndDamagedObjectsFailClearly(backend: Backend) async throws {
        let place = try Place(backend)
        try await place.writeVersion1(2)
        let store = try place.store(Contact.self, keepsObjectsInMemory: false)
        let sound = Contact.numbered(9)
        let encoded = try JSONEncoder().encode(sound)
        var atZero = try JSONDecoder().decode([String: JSONValue].self, from: encoded)
        atZero["$schemaVersion"] = 0
        var notANumber = atZero
        notANumber["$schemaVersion"] = "three"
        let hostile: [(key: String, data: Data, code: StorageError.Code, says: String)] = [
            ("at-zero", try JSONEncoder().encode(atZero), .migrationFailed, "versions start at 1"),
            ("not-a-number", try JSONEncoder().encode(notANumber), .decodingFailed, "$schemaVersion"),
            ("an-array", Data("[1, 2, 3]".utf8), .decodingFailed, "an-array"),
            ("not-json", Data("{\"id\": \"not-json\", ".utf8), .corrupted, "not valid JSON"),
        ]
        for (key, data, _, _) in hostile {
            try await store.backend.setRecord(data, forKey: key)
        }
        for (key, _, code, says) in hostile {
            let error = try await #require(throws: StorageError.self) { try await store.object(withID: key) }
            #expect(error.code == code, "\(key)")
            #expect(error.key == key)
            #expect(error.message.contains(says), "\(key): \(error.message)")
        }

        let failure = try await #require(throws: StorageError.self) { try await store.migrate() }
        #expect(failure.code == .migrationFailed)
        #expect(failure.message.contains("4 of 6 objects could not be migrated"))
        #expect(failure.message.contains("2 were migrated"))
        for (key, data, _, _) in hostile {
            #expect(try await store.backend.record(forKey: key) == data, "\(key) was left as it was")
        }
        #expect(try await store.object(withID: "contact-1") == Contact.numbered(1))
    }

    @Test func anIncompletePlanFailsClearly() async throws {
        struct Gapped: VersionedObject, Identifiable, Sendable {
            static let schemaVersion = 3
            static let migrations = ObjectMigrations<Gapped>().migratingJSON(from: 1) { _ in }
            var id: String
        }
        let place = try Place(.memory)
        try await place.writeVersion1(1)
        let store = try place.store(Gapped.self, keepsObjectsInMemory: false)
        let error = try await #require(throws: StorageError.self) { try await store.object(withID: "contact-0") }
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("no migration from version 2"))
    }

    @Test func readersDuringAMigrationSeeEveryObjectWhole() async throws {
        let place = try Place(.folder)
        let count = 200
        try await place.writeVersion1(count)
        let store = try place.store(Contact.self, keepsObjectsInMemory: false)
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                try await store.migrate()
                return 0
            }
            for reader in 0..<4 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<3 {
                        for n in stride(from: (reader + round) % 4, to: count, by: 4)
                        where try await store.object(withID: "contact-\(n)") != Contact.numbered(n) {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(try await store.migrate() == MigrationReport(migrated: 0, alreadyCurrent: count))
    }

    @Test func sqliteIndexesHoldTheNewShapeBeforeAndAfterMigrating() async throws {
        let place = try Place(.sqlite)
        try await place.writeVersion1(4)
        // An index new to the file is filled from the version-1 records, migrated.
        let store = try place.store(ContactV2.self, indexes: [.init("age", \.age), .init("fullName", \.fullName)])
        #expect(try await store.objects(indexed: "age", .greaterThan(21)).map(\.id) == ["contact-2", "contact-3"])
        #expect(try await store.objects(indexed: "fullName", .equal("Person 1")).map(\.id) == ["contact-1"])
        #expect(try await store.migrate() == MigrationReport(migrated: 4, alreadyCurrent: 0))
        #expect(try await store.objects(indexed: "age", .lessThan(22)).map(\.id) == ["contact-0", "contact-1"])
    }

    @Test func typesWithoutAVersionAreWrittenAsBefore() async throws {
        let store = ObjectStore<Tagged>.inMemory()
        try await store.save(Tagged(id: "a", value: 1))
        let data = try #require(try await store.backend.record(forKey: "a"))
        #expect(!String(decoding: data, as: UTF8.self).contains("schemaVersion"))
        #expect(try await store.migrate() == MigrationReport(migrated: 0, alreadyCurrent: 1))
    }

    /// A migration killed at any moment loses no object: each one is at version 1 or 3, and
    /// reads as version 3 either way; the next `migrate()` finishes.
    @Test func aMigrationKilledMidwayLosesNothingAndTheNextOneFinishes() async throws {
        let executable = try #require(StrataExecutable.url(), "the strata executable was not built")
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let count = 300
        let folder = scratch.child("contacts")
        let populate = try ChildProcess([
            executable.path, "debug-migrate", "--folder", folder.path, "--populate", "\(count)",
        ])
        #expect(await populate.waitForExit() == .exited(0))

        for killAfter in [1, 40, 170, 299] {
            let child = try ChildProcess(
                [executable.path, "debug-migrate", "--folder", folder.path],
                standardOutput: .pipe
            )
            var lines = child.lines.makeAsyncIterator()
            var migratedSoFar = 0
            while let line = await lines.next() {
                if line.hasPrefix("migrated "), let n = Int(line.dropFirst(9)) { migratedSoFar = n }
                if migratedSoFar >= killAfter || line.hasPrefix("done") { break }
            }
            child.signal(SIGKILL)
            _ = await child.waitForExit()

            let store = try ObjectStore<Contact>(url: folder, options: .init(keepsObjectsInMemory: false))
            var versions: [JSONValue: Int] = [:]
            for n in 0..<count {
                #expect(
                    try await store.object(withID: "contact-\(n)") == Contact.numbered(n),
                    "after a kill at \(killAfter)"
                )
                let data = try #require(try await store.backend.record(forKey: "contact-\(n)"))
                guard case .object(let json) = try JSONDecoder().decode(JSONValue.self, from: data) else { continue }
                versions[json["$schemaVersion"] ?? 1, default: 0] += 1
            }
            #expect(versions.values.reduce(0, +) == count)
            // What the killed process reported migrated stayed migrated.
            #expect(versions[3, default: 0] >= killAfter, "after a kill at \(killAfter): \(versions)")
            #expect(try await store.verify().isEmpty)
        }
        let store = try ObjectStore<Contact>(url: folder)
        let report = try await store.migrate()
        #expect(report.migrated + report.alreadyCurrent == count)
        #expect(try await store.migrate() == MigrationReport(migrated: 0, alreadyCurrent: count))
        #expect(try await store.all().count == count)
    }
}
