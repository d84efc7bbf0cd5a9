import Foundation
import Strata
import StrataObjects
import Testing

@Suite struct ReferenceTests {
    struct Fixture {
        let users = ObjectStore<User>.inMemory()
        let messages = ObjectStore<Message>.inMemory()
        let dax = User(name: "Dax")
        let eevie = User(name: "Eevie")
        let greeting: Message
        let response: Message

        init() async throws {
            greeting = Message(author: Reference(to: dax), content: "Good morning~", readers: [Reference(to: eevie)])
            response = Message(
                author: Reference(to: eevie),
                content: "Hi!",
                replyTo: Reference(to: greeting),
                readers: [Reference(to: dax), Reference(to: eevie)]
            )
            try await users.save(contentsOf: [dax, eevie])
            try await messages.save(contentsOf: [greeting, response])
        }
    }

    @Test func aReferenceEncodesAsTheBareIDAndResolves() async throws {
        let fixture = try await Fixture()

        let json = try JSONEncoder().encode(fixture.greeting.author)
        let author = try await fixture.users.object(for: fixture.greeting.author)
        let readers = try await fixture.users.objects(for: fixture.response.readers)

        #expect(String(decoding: json, as: UTF8.self) == "\"\(fixture.dax.id.uuidString)\"")
        #expect(author == fixture.dax)
        #expect(readers == [fixture.dax, fixture.eevie])
    }

    @Test func nullifyClearsOptionalReferencesAndRemovesFromArrays() async throws {
        let fixture = try await Fixture()
        fixture.messages.addDeleteRule(.nullify, for: fixture.messages, via: \.replyTo)
        fixture.users.addDeleteRule(.nullify, for: fixture.messages, via: \.readers)

        try await fixture.messages.delete(withID: fixture.greeting.id)
        try await fixture.users.delete(withID: fixture.eevie.id)

        let response = try #require(try await fixture.messages.object(withID: fixture.response.id))
        #expect(response.replyTo == nil)
        #expect(response.readers == [Reference(to: fixture.dax)])
        #expect(try await fixture.messages.count == 1)
    }

    @Test func cascadeDeletesReferringObjectsAndFollowsTheirRules() async throws {
        let fixture = try await Fixture()
        fixture.users.addDeleteRule(.cascade, for: fixture.messages, via: \.author)
        fixture.messages.addDeleteRule(.cascade, for: fixture.messages, via: \.replyTo)
        let unrelated = Message(author: Reference(to: fixture.eevie), content: "unrelated")
        try await fixture.messages.save(unrelated)

        // Deleting Dax deletes his greeting, which deletes the reply to it (written by Eevie).
        try await fixture.users.delete(withID: fixture.dax.id)

        #expect(try await fixture.messages.all() == [unrelated])
        #expect(try await fixture.users.all() == [fixture.eevie])
    }

    @Test func denyRefusesAndDeletesNothing() async throws {
        let fixture = try await Fixture()
        fixture.users.addDeleteRule(.deny, for: fixture.messages, via: \.author)
        fixture.users.addDeleteRule(.nullify, for: fixture.messages, via: \.readers)

        let error = await #expect(throws: StorageError.self) { try await fixture.users.delete(withID: fixture.dax.id) }

        #expect(error?.code == .deleteDenied)
        #expect(error?.message.contains("Message.author") == true)
        #expect(try await fixture.users.count == 2)
        #expect(try await fixture.messages.object(withID: fixture.response.id) == fixture.response)
    }

    @Test func denyIsCheckedAcrossTheWholeCascadeFirst() async throws {
        let fixture = try await Fixture()
        // Deleting a user cascades to their messages; a message that is replied to cannot go.
        fixture.users.addDeleteRule(.cascade, for: fixture.messages, via: \.author)
        fixture.messages.addDeleteRule(.deny, for: fixture.messages, via: \.replyTo)

        let error = await #expect(throws: StorageError.self) { try await fixture.users.delete(withID: fixture.dax.id) }

        #expect(error?.code == .deleteDenied)
        #expect(try await fixture.users.count == 2)
        #expect(try await fixture.messages.count == 2)
    }

    @Test func denyAllowsDeletingWhenTheReferrersGoToo() async throws {
        let fixture = try await Fixture()
        let users = fixture.users
        let messages = fixture.messages
        users.addDeleteRule(.cascade, for: messages, via: \.author)
        messages.addDeleteRule(.deny, for: messages, via: \.replyTo)
        try await messages.delete(withID: fixture.response.id)

        try await users.delete(withID: fixture.dax.id)

        #expect(try await messages.count == 0)
    }

    @Test func rulesDoNotKeepTheSourceStoreAlive() async throws {
        let users = ObjectStore<User>.inMemory()
        let dax = User(name: "Dax")
        try await users.save(dax)
        weak var released: ObjectStore<Message>?
        do {
            let messages = ObjectStore<Message>.inMemory()
            released = messages
            users.addDeleteRule(.deny, for: messages, via: \.author)
            try await messages.save(Message(author: Reference(to: dax), content: "x"))
        }

        #expect(released == nil)
        #expect(try await users.delete(withID: dax.id))
    }
}
