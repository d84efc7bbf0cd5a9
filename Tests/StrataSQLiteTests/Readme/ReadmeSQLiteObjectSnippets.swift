import Foundation
import StrataObjects
import StrataSQLite
import StrataSQLiteObjects
import Testing

// The indexed SQLite object store examples of the "Getting started in an app" article
// (Strata.docc), copied there by hand; compiled here so they keep up with the API, and the test
// below runs them.

enum ReadmeSQLiteObjects {
    struct Todo: Codable, Identifiable, Sendable {
        var id = UUID()
        var title: String
        var priority: Int
    }

    static func run(in folder: URL) async throws -> (urgent: [Todo], count: Int) {
        let path = folder.appendingPathComponent("todos.sqlite").path
        let backend = try SQLiteObjectBackend<Todo>(
            path: path,
            indexes: [.init("priority", \.priority), .init("title", \.title)]  // kept in SQL, by key path
        )
        let todos = ObjectStore<Todo>(backend: backend)
        try await todos.save(contentsOf: [Todo(title: "Ship it", priority: 3), Todo(title: "Rest", priority: 1)])
        // Answered by SQL on the index; only the matching objects are read and decoded.
        let urgent = try await todos.objects(indexed: "priority", .greaterThan(2), order: .descending, limit: 10)
        let count = try await todos.count(indexed: "title", .between("A", "S"))
        return (urgent, count)
    }
}

@Suite struct ReadmeSQLiteObjectSnippetTests {
    @Test func theReadmesIndexedSQLiteExampleRuns() async throws {
        let folder = try TemporaryFolder()

        let (urgent, count) = try await ReadmeSQLiteObjects.run(in: folder.url)

        #expect(urgent.map(\.title) == ["Ship it"])
        #expect(count == 1)
    }
}
