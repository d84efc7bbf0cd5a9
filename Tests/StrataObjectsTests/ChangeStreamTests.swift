import Foundation
import Observation
import Strata
import StrataObjects
import Testing

@Suite struct ChangeStreamTests {
    @Test func everyWriteIsReportedInOrder() async throws {
        let store = ObjectStore<Note>.inMemory()
        let changes = store.changes()
        let note = Note(title: "a")

        try await store.save(note)
        try await store.update(withID: note.id) { $0.title = "b" }
        try await store.save(Note(id: note.id, title: "c"))
        try await store.delete(withID: note.id)

        var seen: [ObjectChange<UUID>] = []
        for await change in changes {
            seen.append(change)
            if seen.count == 4 { break }
        }
        #expect(seen == [.inserted(note.id), .updated(note.id), .updated(note.id), .deleted(note.id)])
    }

    @Test func severalSubscribersEachGetEveryChangeAndEndingOneLeavesTheOthers() async throws {
        let store = ObjectStore<Note>.inMemory()
        let first = store.changes()
        var second: AsyncStream<ObjectChange<UUID>>? = store.changes()
        let note = Note(title: "a")

        try await store.save(note)
        second = nil
        try await store.delete(withID: note.id)

        var iterator = first.makeAsyncIterator()
        #expect(await iterator.next() == .inserted(note.id))
        #expect(await iterator.next() == .deleted(note.id))
        #expect(second == nil)
    }

    @Test func cascadedDeletesAreReportedByTheirOwnStore() async throws {
        let users = ObjectStore<User>.inMemory()
        let messages = ObjectStore<Message>.inMemory()
        users.addDeleteRule(.cascade, for: messages, via: \.author)
        let dax = User(name: "Dax")
        let message = Message(author: Reference(to: dax), content: "x")
        try await users.save(dax)
        try await messages.save(message)
        let changes = messages.changes()

        try await users.delete(withID: dax.id)

        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() == .deleted(message.id))
    }
}

@Suite @MainActor struct LiveQueryTests {
    /// Waits until the query's results change, observed through Observation.
    private func nextChange(of query: LiveQuery<Note>) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            withObservationTracking {
                _ = query.results
            } onChange: {
                continuation.resume()
            }
        }
        // onChange fires before the new value is set; let the setter finish.
        await Task.yield()
    }

    @Test func resultsFollowMatchingChanges() async throws {
        let store = ObjectStore<Note>.inMemory()
        let urgent = Note(title: "urgent", priority: 3)
        try await store.save(urgent)
        let query = store.liveQuery(matching: #Predicate { $0.priority >= 2 }, sortedBy: [SortDescriptor(\.title)])
        await nextChange(of: query)
        #expect(query.results == [urgent])

        let another = Note(title: "another", priority: 2)
        async let inserted: Void = nextChange(of: query)
        try await store.save(another)
        await inserted
        #expect(query.results.map(\.title) == ["another", "urgent"])

        async let demoted: Void = nextChange(of: query)
        try await store.update(withID: urgent.id) { $0.priority = 0 }
        await demoted
        #expect(query.results == [another])

        async let deleted: Void = nextChange(of: query)
        try await store.delete(withID: another.id)
        await deleted
        #expect(query.results.isEmpty)
    }

    @Test func aNonMatchingChangeDoesNotRefresh() async throws {
        let store = ObjectStore<Note>.inMemory()
        let query = store.liveQuery(matching: #Predicate { $0.priority >= 2 })
        await nextChange(of: query)
        let refreshes = query.refreshCount
        let changes = store.changes()

        try await store.save(Note(title: "low", priority: 0))
        var iterator = changes.makeAsyncIterator()
        _ = await iterator.next()
        // The query saw the same change; give it its turn on the main actor.
        for _ in 0..<10 { await Task.yield() }

        #expect(query.refreshCount == refreshes)
        #expect(query.results.isEmpty)
    }

    @MainActor
    @Test func aQueryThatIsNeverReadNeverQueries() async throws {
        let store = ObjectStore<Note>.inMemory()
        // As SwiftUI does with a @State initial value it discards: made on every view
        // initialisation, never read.
        let discarded = (0..<50).map { _ in store.liveQuery(matching: #Predicate { $0.priority >= 2 }) }
        try await store.save(Note(title: "urgent", priority: 3))
        for _ in 0..<10 { await Task.yield() }
        #expect(discarded.allSatisfy { !$0.isStarted && $0.refreshCount == 0 })

        // The one the view keeps starts when the view first reads it.
        let kept = discarded[0]
        await nextChange(of: kept)
        #expect(kept.isStarted)
        #expect(kept.results.map(\.title) == ["urgent"])
        #expect(discarded.dropFirst().allSatisfy { !$0.isStarted })
    }
}
