import ArgumentParser
import Foundation
import Strata
package import StrataObjects

/// `strata debug-migrate`: fills an object folder with version-1 contacts, or migrates one to
/// version 3 printing its progress, for the tests that kill a migration mid-way. Hidden from
/// `--help`.
///
/// With `--populate N` it saves N ``ContactV1`` objects (`contact-0` … ) and exits. Otherwise it
/// opens the folder as ``Contact`` objects, prints `ready`, runs ``ObjectStore/migrate(progress:)``
/// printing `migrated <completed>` after each object, and prints `done <migrated>`.
struct DebugMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-migrate",
        abstract: "Fill or migrate an object folder of test contacts (for Strata's own tests).",
        shouldDisplay: false
    )

    @Option(help: "The object folder.") var folder: String
    @Option(help: "Save this many version-1 contacts and exit.") var populate: Int?

    func run() async throws {
        let url = URL(fileURLWithPath: folder)
        if let populate {
            let store = try ObjectStore<ContactV1>(url: url)
            try await store.save(contentsOf: (0..<populate).map(ContactV1.numbered))
            return
        }
        let store = try ObjectStore<Contact>(url: url, options: .init(keepsObjectsInMemory: false))
        say("ready")
        let report = try await store.migrate { progress in say("migrated \(progress.completed)") }
        say("done \(report.migrated)")
    }

    /// Writes one line to standard output at once, so a test reading it sees it before a kill.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// A contact as the first version of an app stored it, with no schema version.
package struct ContactV1: Codable, Identifiable, Sendable, Equatable {
    package var id: String
    package var name: String
    /// A number written as text, which version 2 stores as a number.
    package var age: String
    /// Dropped in version 2.
    package var fax: String

    package init(id: String, name: String, age: String, fax: String) {
        self.id = id
        self.name = name
        self.age = age
        self.fax = fax
    }

    /// The contact number `n` the tests write: `contact-n`, aged 20 + n mod 50.
    package static func numbered(_ n: Int) -> ContactV1 {
        ContactV1(id: "contact-\(n)", name: "Person \(n)", age: "\(20 + n % 50)", fax: "555-\(n)")
    }
}

/// Version 2: `name` renamed `fullName`, `age` a number, `fax` gone, and `email` new, with no
/// default.
package struct ContactV2: VersionedObject, Identifiable, Sendable, Equatable {
    package static let schemaVersion = 2
    package static let migrations = ObjectMigrations<ContactV2>().migrating(from: 1, as: ContactV1.self, ContactV2.init)

    package var id: String
    package var fullName: String
    package var age: Int
    package var email: String

    package init(id: String, fullName: String, age: Int, email: String) {
        self.id = id
        self.fullName = fullName
        self.age = age
        self.email = email
    }

    /// Version 1 brought to version 2; an age that is not a number fails the migration.
    package init(_ old: ContactV1) throws {
        guard let age = Int(old.age) else { throw ContactMigrationError(field: "age", value: old.age) }
        self.init(id: old.id, fullName: old.name, age: age, email: "\(old.id)@example.com")
    }
}

/// Version 3, through a JSON step from version 2: `tags`, empty for old contacts.
package struct Contact: VersionedObject, Identifiable, Sendable, Equatable {
    package static let schemaVersion = 3
    package static let migrations = ObjectMigrations<Contact>()
        .migrating(from: 1, as: ContactV1.self, ContactV2.init)
        .migratingJSON(from: 2) { object in object["tags"] = [] }

    package var id: String
    package var fullName: String
    package var age: Int
    package var email: String
    package var tags: [String]

    package init(id: String, fullName: String, age: Int, email: String, tags: [String]) {
        self.id = id
        self.fullName = fullName
        self.age = age
        self.email = email
        self.tags = tags
    }

    /// What ``ContactV1/numbered(_:)`` becomes at version 3.
    package static func numbered(_ n: Int) -> Contact {
        Contact(
            id: "contact-\(n)",
            fullName: "Person \(n)",
            age: 20 + n % 50,
            email: "contact-\(n)@example.com",
            tags: []
        )
    }
}

/// A version-1 field that a migration cannot convert.
package struct ContactMigrationError: Error, CustomStringConvertible {
    package var field: String
    package var value: String

    package var description: String { "'\(field)' is '\(value)', not a number" }
}
