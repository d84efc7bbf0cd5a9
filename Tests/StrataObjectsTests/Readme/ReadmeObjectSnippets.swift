import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

// The object store examples of "Getting started in an app" (Strata.docc) and of StrataObjects'
// catalog, each between `// snippet: name` and `// snippet end`; StrataTests' ReadmeTests checks
// that the documents show exactly these lines. The test below runs those of the article; the
// others are compiled only.

enum ReadmeObjects {
    // snippet: object-types
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
    // snippet end

    // snippet: stored-property
    final class Session {
        static let storage = MemoryStorage<String, Data>()  // or a DiskStorage
        @Stored("current-user", in: Session.storage) var user: User? = nil  // saved on each set; nil removes it
    }
    // snippet end

    static func run(in folder: URL) async throws {
        let photo = Data([0xFF, 0xD8, 0xFF])
        // snippet: object-store
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
        // snippet end
        #expect(author?.name == "Dax")

        // snippet: object-queries
        let urgent = try await messages.objects(
            matching: #Predicate { $0.tags.contains("urgent") && $0.replyTo == nil },
            sortedBy: [SortDescriptor(\.content)],
            limit: 10
        )
        let untagged = try await messages.count(matching: #Predicate { $0.tags.isEmpty })
        let fast = try await messages.objects(where: { $0.content.hasPrefix("Good") })  // a compiled closure
        // snippet end
        #expect(urgent.map(\.content) == ["Good morning~!"])
        #expect(untagged == 0)
        #expect(fast.count == 1)

        // snippet: object-archive
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
        // snippet end
        #expect(same?.name == "Dax")
        #expect(lastAccess != nil)
        #expect(mostRecent.count == 1)

        try await users.delete(withID: dax.id)
        #expect(try await messages.count == 0)  // cascaded
        let session = Session()
        session.user = dax
        #expect(Session().user?.name == "Dax")
    }

    /// An object that refers to a user, for the article's delete rules.
    struct Invoice: Codable, Identifiable, Sendable {
        var id = UUID()
        var customer: Reference<User>
    }

    /// "The object store and its queries": rules on the store whose objects are referred to.
    static func deleteRules(users: ObjectStore<User>, messages: ObjectStore<Message>, invoices: ObjectStore<Invoice>) {
        // snippet: delete-rules
        users.addDeleteRule(.cascade, for: messages, via: \.author)
        messages.addDeleteRule(.nullify, for: messages, via: \.replyTo)
        users.addDeleteRule(.deny, for: invoices, via: \.customer)
        // snippet end
    }

    /// StrataObjects' catalog page. Compiled, not run: it opens a store in Application Support.
    static func catalogExample(greeting: Message) async throws {
        // snippet: object-store-overview
        let messages = try ObjectStore<Message>(folder: "messages", in: .applicationSupport)
        try await messages.save(greeting)
        try await messages.update(withID: greeting.id) { $0.content.append("!") }
        let urgent = try await messages.objects(
            matching: #Predicate { $0.tags.contains("urgent") },
            sortedBy: [SortDescriptor(\.content)],
            limit: 10
        )
        // snippet end
        _ = urgent
    }
}

@Suite struct ReadmeObjectSnippetTests {
    @Test func theReadmesObjectExamplesRun() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }

        try await ReadmeObjects.run(in: scratch.url)
    }
}

// The schema migration example of "The object store and its queries" (StrataObjects.docc),
// between `// snippet: name` and `// snippet end`: compiled only, since it opens a store in
// Application Support. The test below runs the same types, at the enum's level, on a folder
// holding a version-1 contact.

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

    /// The article's block: its types are local, so they do not clash with those above.
    static func example() async throws -> MigrationReport {
        // snippet: object-migrations
        struct ContactV1: Codable {
            var id: String
            var name: String
            var age: String
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

        let contacts = try ObjectStore<Contact>(folder: "contacts", in: .applicationSupport)
        let ada = try await contacts.object(withID: "ada")  // a version-1 file, migrated as it is read
        let report = try await contacts.migrate { progress in print(progress.completed, "of", progress.total) }
        // snippet end
        _ = ada
        return report
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
