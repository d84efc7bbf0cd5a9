#if Postgres
import Foundation
import Strata
import StrataCommandLine
import StrataObjects
import Testing

@testable import StrataPostgresObjects

extension PostgresObjectBackendTests {
    /// Version-1 rows read as version 3 through the chain, a new index is filled from them
    /// migrated, and `migrate()` rewrites them as version-3 JSONB.
    @Test func version1RowsMigrateAndTheirIndexesHoldTheNewShape() async throws {
        try await withBackend(ContactV1.self) { old in
            try await ObjectStore<ContactV1>(backend: old).save(contentsOf: (0..<6).map(ContactV1.numbered))
            try await ObjectStore<ContactV1>(backend: old)
                .save(ContactV1(id: "bad", name: "Nobody", age: "thirty", fax: ""))

            let backend = try await PostgresObjectBackend<Contact>(
                storage: old.storage,
                table: old.table,
                indexes: [.init("age", \.age)]
            )
            let store = ObjectStore<Contact>(backend: backend, options: .init(keepsObjectsInMemory: false))
            #expect(try await store.object(withID: "contact-4") == Contact.numbered(4))
            #expect(try await store.objects(indexed: "age", .greaterThan(23)).map(\.id) == ["contact-4", "contact-5"])

            let failure = try await #require(throws: StorageError.self) { try await store.migrate() }
            #expect(failure.code == .migrationFailed)
            #expect(failure.message.contains("1 of 7") && failure.message.contains("'bad'"))
            let migrated = try #require(try await backend.record(forKey: "contact-2"))
            let json = try JSONDecoder().decode([String: JSONValue].self, from: migrated)
            #expect(json["$schemaVersion"] == 3)
            #expect(json["tags"] == [])
            #expect(try await store.objects(indexed: "age", .lessThan(22)).map(\.id) == ["contact-0", "contact-1"])
            #expect(try await ObjectStore<ContactV1>(backend: old).object(withID: "bad")?.age == "thirty")
        }
    }
}
#endif
