import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

// The SQLite example of the "Getting started in an app" article (Strata.docc), copied there by
// hand; compiled here so it keeps up with the API, and the test below runs it.

enum ReadmeSQLite {
    static func run(in folder: URL) throws {
        let data = Data("report".utf8)
        let a = Data("a".utf8)
        let b = Data("b".utf8)
        let path = folder.appendingPathComponent("cache.sqlite").path
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
        #expect(found == [a, b, nil])
        #expect(try store.value(forKey: "visits") == Data("1".utf8))
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
