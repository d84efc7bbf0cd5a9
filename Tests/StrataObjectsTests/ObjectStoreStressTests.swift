import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

/// Many tasks saving, updating, deleting, querying and reloading one store at once. Also run
/// under ThreadSanitizer by scripts/test.sh.
@Suite(.onTestThreads) struct ObjectStoreStressTests {
    /// Runs `count` random operations on `store`; returns how many times it incremented the counter.
    private static func randomOperations(
        on store: ObjectStore<Note>,
        ids: [UUID],
        counterID: UUID,
        seed: UInt64,
        count: Int
    ) async throws -> Int {
        var generator = SeededGenerator(seed: seed)
        var increments = 0
        let highPriority: Predicate<Note> = #Predicate<Note> { note in note.priority > 2 }
        for _ in 0..<count {
            let id = ids[Int(generator.next() % UInt64(ids.count))]
            let choice = generator.next() % 7
            if choice < 2 {
                let note = Note(id: id, title: "t\(seed)", priority: Int(generator.next() % 5))
                try await store.save(note)
            } else if choice == 2 {
                if try await store.contains(id: id) {
                    do throws(StorageError) {
                        try await store.update(withID: id) { (note: inout Note) in note.priority += 1 }
                    } catch {
                        // Deleted by another task in between is fine; anything else is not.
                        if error.code != .notFound { throw error }
                    }
                }
            } else if choice == 3 {
                try await store.delete(withID: id)
            } else if choice == 4 {
                let found: [Note] = try await store.objects(matching: highPriority, limit: 5)
                _ = found.count
            } else if choice == 5 {
                try await store.update(withID: counterID) { (note: inout Note) in note.counter += 1 }
                increments += 1
            } else {
                _ = try await store.object(withID: id)
            }
        }
        return increments
    }

    @Test(arguments: BackendKind.allCases)
    func concurrentOperationsKeepTheStoreConsistent(_ backend: BackendKind) async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let store = try backend.store(Note.self, in: scratch)
        let ids = (0..<40).map { _ in UUID() }
        let counter = Note(title: "counter")
        try await store.save(counter)
        let changes = store.changes()

        let increments: Int = try await withThrowingTaskGroup(of: Int.self) {
            (group: inout ThrowingTaskGroup<Int, any Error>) -> Int in
            for task in 0..<4 {
                group.addTask { () async throws -> Int in
                    try await Self.randomOperations(
                        on: store,
                        ids: ids,
                        counterID: counter.id,
                        seed: UInt64(task + 1),
                        count: 400
                    )
                }
            }
            group.addTask { () async throws -> Int in
                for _ in 0..<5 { try await store.reload() }
                return 0
            }
            var total = 0
            for try await count in group { total += count }
            return total
        }

        let stored: Note? = try await store.object(withID: counter.id)
        #expect(stored?.counter == increments)
        let inMemory: Set<Note> = Set(try await store.all())
        var fresh: ObjectStore<Note> = store
        if backend == .folder { fresh = try ObjectStore<Note>(url: scratch.child("store")) }
        let reread: [Note] = try await fresh.all()
        #expect(Set(reread) == inMemory)
        #expect(reread.count == inMemory.count)
        _ = changes  // kept subscribed throughout, so publishing ran under load
    }
}
