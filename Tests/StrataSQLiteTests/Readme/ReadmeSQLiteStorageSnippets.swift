import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

// The SQLite examples of "Getting started in an app" (Strata.docc) and of StrataSQLite's catalog,
// each between `// snippet: name` and `// snippet end`; StrataTests' ReadmeTests checks that the
// documents show exactly these lines. The test below runs the article's; the catalog's is
// compiled only.

enum ReadmeSQLite {
    static func run(in folder: URL) throws {
        let data = Data("report".utf8)
        let a = Data("a".utf8)
        let b = Data("b".utf8)
        let path = folder.appendingPathComponent("cache.sqlite").path
        // snippet: sqlite-storage
        let store = try SQLiteStorage(
            path: path,
            options: .init(timeToLive: .seconds(3600), maximumByteCount: 50_000_000)
        )
        try store.set(data, forKey: "report")  // no await needed
        try store.setValues(["a": a, "b": b])  // one transaction
        let found = try store.values(forKeys: ["a", "b", "missing"])  // [a, b, nil]
        try store.update(forKey: "visits") { value in  // in one write transaction
            let visits = value.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            value = Data("\(visits + 1)".utf8)
        }
        print(try store.statistics())  // count, bytes, hits, evictions…
        // snippet end
        #expect(found == [a, b, nil])
        #expect(try store.value(forKey: "visits") == Data("1".utf8))
    }

    struct City: Codable, Sendable {
        var name: String
    }

    /// StrataSQLite's catalog page. Compiled, not run: it makes a file in the current folder.
    static func catalogExample(kharkiv: City) async throws {
        // snippet: sqlite-json
        let cities = try SQLiteStorage(path: "cities.sqlite", options: .init(timeToLive: .seconds(3600)))
            .json(City.self)
        try await cities.set(kharkiv, forKey: "kharkiv")
        // snippet end
    }
}

@Suite struct ReadmeSQLiteSnippetTests {
    @Test func theReadmesSQLiteExampleRuns() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { FolderRemoval.remove(folder) }

        try ReadmeSQLite.run(in: folder)
    }
}
