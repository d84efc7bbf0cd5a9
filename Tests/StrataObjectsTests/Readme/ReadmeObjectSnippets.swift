import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

// The object store examples of the "Getting started in an app" article (Strata.docc), copied
// there by hand; compiled here so they keep up with the API, and the test below runs them.

enum ReadmeObjects {
    struct User: Codable, Identifiable, Sendable {
        var id = UUID()
        var name: String
    }

    struct Message: Codable, Identifiable, Sendable {
        var id = UUID()
        var author: Reference<User>  // stored as the bare ID
        var content: String
        var replyTo: Reference<Message>?
        var tags: [String] = []
    }

    final class Session {
        static let storage = MemoryStorage<String, Data>()  // or a DiskStorage
        @Stored("current-user", in: Session.storage) var user: User? = nil  // saved on each set; nil removes it
    }

    static func run(in folder: URL) async throws {
        let photo = Data([0xFF, 0xD8, 0xFF])
        let users = try ObjectStore<User>(url: folder.appendingPathComponent("users"))
        let messages = try ObjectStore<Message>(url: folder.appendingPathComponent("messages"))
        let dax = User(name: "Dax")
        try await users.save(dax)
        let greeting = Message(author: Reference(to: dax), content: "Good morning~", tags: ["urgent"])
        try await messages.save(greeting)
        try await messages.update(withID: greeting.id) { $0.content.append("!") }  // atomic in this store
        let author = try await users.object(for: greeting.author)

        // What deleting a user does to what refers to it: .nullify, .cascade or .deny.
        users.addDeleteRule(.cascade, for: messages, via: \.author)
        messages.addDeleteRule(.nullify, for: messages, via: \.replyTo)

        // Binary attachments live beside the object and go with it.
        try await messages.setAttachment(photo, named: "photo.jpg", forObjectWithID: greeting.id)
        #expect(author?.name == "Dax")

        let urgent = try await messages.objects(
            matching: #Predicate { $0.tags.contains("urgent") && $0.replyTo == nil },
            sortedBy: [SortDescriptor(\.content)],
            limit: 10
        )
        let untagged = try await messages.count(matching: #Predicate { $0.tags.isEmpty })
        let fast = try await messages.objects(where: { $0.content.hasPrefix("Good") })  // a compiled closure
        #expect(urgent.map(\.content) == ["Good morning~!"])
        #expect(untagged == 0)
        #expect(fast.count == 1)

        let archive = try ObjectArchive<User>(
            url: folder.appendingPathComponent("archive"),
            maximumMemoryByteCount: 10 << 10,
            maximumDiskByteCount: 20 << 10
        )
        try archive.record(dax)  // LRU by access time, in memory and on disk
        let same = try archive.object(withID: dax.id)  // access(archiveWithKey:)
        let lastAccess = archive.lastAccessDate(forID: dax.id)  // latestAccessedTime(for:)
        try archive.removeObjects(notAccessedWithin: .seconds(7 * 86_400))  // deleteAllInvalidateArchives
        let mostRecent = try archive.objects(limit: 10)  // accessAll(limitedBy:)
        #expect(same?.name == "Dax")
        #expect(lastAccess != nil)
        #expect(mostRecent.count == 1)

        try await users.delete(withID: dax.id)
        #expect(try await messages.count == 0)  // cascaded
        let session = Session()
        session.user = dax
        #expect(Session().user?.name == "Dax")
    }
}

@Suite struct ReadmeObjectSnippetTests {
    @Test func theReadmesObjectExamplesRun() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }

        try await ReadmeObjects.run(in: scratch.url)
    }
}

// The schema migration example of "The object store and its queries" (StrataObjects.docc), copied
// there by hand; the test below runs it on a folder holding a version-1 contact.

enum ArticleMigrations {
    struct ContactV1: Codable {
        var id: String
        var name: String
        var age: String
    }

    struct ContactV2: Codable {
        var id: String
        var fullName: String
        var age: Int
    }

    struct Contact: VersionedObject, Identifiable, Sendable {
        static let schemaVersion = 3
        static let migrations = ObjectMigrations<Contact>()
            .migrating(from: 1, as: ContactV1.self) { old in
                ContactV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
            }
            .migratingJSON(from: 2) { object in object["email"] = .string("") }

        var id: String
        var fullName: String
        var age: Int
        var email: String
    }

    struct StoredV1: Codable, Identifiable, Sendable {
        var id: String
        var name: String
        var age: String
    }

    static func run(in folder: URL) async throws {
        try await ObjectStore<StoredV1>(url: folder).save(StoredV1(id: "ada", name: "Ada", age: "36"))

        let contacts = try ObjectStore<Contact>(url: folder)
        let ada = try await contacts.object(withID: "ada")  // a version-1 file, migrated as it is read
        let report = try await contacts.migrate { progress in print(progress.completed, "of", progress.total) }
        #expect(ada?.fullName == "Ada" && ada?.age == 36 && ada?.email == "")
        #expect(report == MigrationReport(migrated: 1, alreadyCurrent: 0))
    }
}

@Test func theArticlesMigrationExampleRuns() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "strata-article-migrations-\(UUID().uuidString)"
    )
    defer { FolderRemoval.remove(folder) }
    try await ArticleMigrations.run(in: folder)
}
