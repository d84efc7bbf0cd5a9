#if Postgres
import Foundation
import Strata
import StrataPostgres
import StrataTestSupport
import Testing

/// The `strata` tool's ls, get, set, rm and stats work on SQLite files and PostgreSQL tables as
/// they do on folders, and `strata demo` runs on each backend.
@Suite(.onTestThreads) struct CommandLineTests {
    private static func strata(
        _ arguments: [String],
        input: String = ""
    ) async throws -> (status: Int32, output: String, errors: String) {
        let executable = try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
        return await Shell.run([executable.path] + arguments, input: Data(input.utf8))
    }

    @Test func toolsWorkOnASQLiteFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "strata-cli-\(UUID().uuidString).sqlite"
        ).path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let key = "'); DROP TABLE strata_values; --"

        let set = try await Self.strata(["set", "--sqlite", path, key], input: "hello")
        let get = try await Self.strata(["get", "--sqlite", path, key])
        let list = try await Self.strata(["ls", "--sqlite", path])
        let stats = try await Self.strata(["stats", "--sqlite", path])
        let remove = try await Self.strata(["rm", "--sqlite", path, key])
        let missing = try await Self.strata(["get", "--sqlite", path, key])

        #expect(set.status == 0, "\(set.errors)")
        #expect(get.output == "hello")
        #expect(list.output.contains(key))
        #expect(stats.output.contains("values:        1"))
        // The figures every backend prints alike, named as StorageMetrics reports them.
        #expect(stats.output.contains("hit_ratio"), "\(stats.output)")
        #expect(stats.output.contains("evictions{reason=size}"), "\(stats.output)")
        #expect(remove.status == 0)
        #expect(missing.status == 1)
    }

    @Test func aGarbageSQLiteFileIsReportedNotCrashedOn() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "strata-cli-\(UUID().uuidString).sqlite"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(repeating: 0x5A, count: 4_096).write(to: URL(fileURLWithPath: path))

        let list = try await Self.strata(["ls", "--sqlite", path])

        #expect(list.status == 1)
        #expect(list.errors.contains("corrupted"))
    }

    @Test func toolsWorkOnAPostgreSQLTable() async throws {
        let storage = try await PostgresTestServer.storage()
        let base = ["--postgres", try PostgresTestServer.url(), "--table", storage.options.table]

        let set = try await Self.strata(["set"] + base + ["greeting"], input: "hello")
        let fromLibrary = try await storage.value(forKey: "greeting")
        let get = try await Self.strata(["get"] + base + ["greeting"])
        let list = try await Self.strata(["ls"] + base)
        let remove = try await Self.strata(["rm"] + base + ["greeting"])

        #expect(set.status == 0, "\(set.errors)")
        #expect(fromLibrary == Data("hello".utf8))
        #expect(get.output == "hello")
        #expect(list.output.contains("greeting"))
        #expect(remove.status == 0)
        #expect(try await storage.value(forKey: "greeting") == nil)
        await PostgresTestServer.dispose(storage)
    }

    @Test func commandsThatOnlyReadRefuseATableThatIsNotThereAndCreateNone() async throws {
        let storage = try await PostgresTestServer.storage()
        let missing = storage.options.table + "_typo"
        let base = ["--postgres", try PostgresTestServer.url(), "--table", missing]

        let list = try await Self.strata(["ls"] + base)
        let stats = try await Self.strata(["stats"] + base)
        let get = try await Self.strata(["get"] + base + ["k"])
        let remove = try await Self.strata(["rm"] + base + ["k"])
        var options = PostgresStorage.Options(table: missing)
        options.createsTable = false
        let opened = await #expect(throws: StorageError.self) {
            try await PostgresStorage(url: try PostgresTestServer.url(), options: options)
        }

        for result in [list, stats, get, remove] {
            #expect(result.status == 1, "\(result.output)")
            #expect(result.errors.contains("there is no table \(missing)"), "\(result.errors)")
        }
        #expect(
            opened?.code == .notFound,
            "the table was created by one of the commands: \(String(describing: opened))"
        )
        await PostgresTestServer.dispose(storage)
    }

    @Test func lsAndStatsAgreeOnATablesTotal() async throws {
        let storage = try await PostgresTestServer.storage()
        let base = ["--postgres", try PostgresTestServer.url(), "--table", storage.options.table]
        try await storage.set(Data(count: 1_000), forKey: "a")
        try await storage.set(Data(count: 24), forKey: "bb")

        let list = try await Self.strata(["ls"] + base)
        let stats = try await Self.strata(["stats"] + base)

        // 1,024 bytes of values; with the keys' 3 bytes, 1,027, which stats counts.
        #expect(list.output.contains("2 values, 1.0 KiB of values, 1.0 KiB with their keys"), "\(list.output)")
        #expect(stats.output.contains("(1027 bytes)"), "\(stats.output)")
        #expect(stats.output.contains("of keys and values"), "\(stats.output)")
        await PostgresTestServer.dispose(storage)
    }

    @Test func storesAreExclusiveOptions() async throws {
        let both = try await Self.strata(["ls", "--folder", "/tmp/x", "--sqlite", "/tmp/y"])

        #expect(both.status != 0)
        #expect(both.errors.contains("exactly one of --folder, --sqlite and --postgres"))
    }

    @Test(arguments: ["sqlite", "postgres"])
    func theDemoRunsOnEachBackend(backend: String) async throws {
        var arguments = ["demo", "--backend", backend, "--requests", "10", "--latency", "1", "--burst", "4"]
        if backend == "postgres" {
            arguments += ["--postgres", try PostgresTestServer.url()]
        }

        let demo = try await Self.strata(arguments)

        #expect(demo.status == 0, "\(demo.errors)")
        #expect(
            demo.output.contains("source calls:  0 of 10 requests"),
            "the second run found everything in \(backend)"
        )
    }
}
#endif
