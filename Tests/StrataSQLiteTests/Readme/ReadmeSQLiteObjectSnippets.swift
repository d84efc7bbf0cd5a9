import Foundation
import StrataObjects
import StrataSQLite
import StrataSQLiteObjects
import Testing

// The indexed SQLite object store examples of "Getting started in an app" (Strata.docc) and of
// StrataSQLiteObjects' catalog, each between `// snippet: name` and `// snippet end`; StrataTests'
// ReadmeTests checks that the documents show exactly these lines. The test below runs the
// article's; the catalog's is compiled only.

enum ReadmeSQLiteObjects {
    // snippet: todo-type
    struct Todo: Codable, Identifiable, Sendable {
        var id = UUID()
        var title: String
        var priority: Int
    }
    // snippet end

    static func run(in folder: URL) async throws -> (urgent: [Todo], count: Int) {
        let path = folder.appendingPathComponent("todos.sqlite").path
        // snippet: sqlite-object-backend
        let backend = try SQLiteObjectBackend<Todo>(
            path: path,
            indexes: [.init("priority", \.priority), .init("title", \.title)]  // kept in SQL, by key path
        )
        let todos = ObjectStore<Todo>(backend: backend)
        try await todos.save(contentsOf: [Todo(title: "Ship it", priority: 3), Todo(title: "Rest", priority: 1)])
        // Answered by SQL on the index; only the matching objects are read and decoded.
        let urgent = try await todos.objects(indexed: "priority", .greaterThan(2), order: .descending, limit: 10)
        let count = try await todos.count(indexed: "title", .between("A", "S"))
        // snippet end
        return (urgent, count)
    }

    /// StrataSQLiteObjects' catalog page. Compiled, not run: it makes a file in the current folder.
    static func catalogExample() async throws -> [Todo] {
        // snippet: sqlite-object-backend-overview
        let backend = try SQLiteObjectBackend<Todo>(
            path: "todos.sqlite",
            indexes: [.init("priority", \.priority), .init("title", \.title)]
        )
        let todos = ObjectStore<Todo>(backend: backend)
        let urgent = try await todos.objects(indexed: "priority", .greaterThan(2), order: .descending, limit: 10)
        // snippet end
        return urgent
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
