#if Postgres
import Dispatch
import Foundation
import Strata
import StrataPostgres
import StrataTestSupport
import Testing

/// Real processes sharing one PostgreSQL table: a change made in one process drops the key from
/// the other's memory layer, and how long that takes is measured.
///
/// Runs `strata debug-shared-cache` as the other process. Heavy (1,000 round trips): scripts/test.sh
/// runs it with the multi-process suites.
@Suite struct PostgresProcessTests {
    /// Waits for the next line of `lines` that satisfies `matches`.
    private static func next(
        in iterator: inout AsyncStream<String>.Iterator,
        where matches: (String) -> Bool
    ) async throws -> String {
        while let line = await iterator.next(isolation: #isolation) {
            if matches(line) { return line }
        }
        throw PostgresTestEnvironment.Unavailable(description: "the strata process ended early")
    }

    @Test func aChangeInOneProcessDropsTheKeyFromTheOthersMemory() async throws {
        let storage = try await PostgresTestServer.storage()
        let executable = try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
        let other = try ChildProcess(
            [
                executable.path, "debug-shared-cache", "--postgres", try PostgresTestServer.url(), "--table",
                storage.options.table,
            ],
            standardInput: .pipe,
            standardOutput: .pipe
        )
        // It quits on "quit" or at the end of its input; nothing the test checks comes after.
        defer {
            other.send("quit")
            other.closeInput()
        }
        var lines = other.lines.makeAsyncIterator()
        _ = try await Self.next(in: &lines) { $0 == "ready" }
        let cache = try await storage.sharedCache()
        let changes = 1_000
        var delays: [Double] = []
        var filledFromDatabase = 0

        for index in 0..<changes {
            let key = "key-\(index)"
            try await storage.set(Data("old".utf8), forKey: key)
            _ = try await Self.next(in: &lines) { $0.hasPrefix("dropped \(key) ") }
            other.send("read \(key)")
            let read = try await Self.next(in: &lines) { $0.hasPrefix("read \(key) ") }
            if read.hasSuffix(" database") { filledFromDatabase += 1 }

            try await cache.set(Data("new".utf8), forKey: key)
            let acknowledged = DispatchTime.now().uptimeNanoseconds
            let dropped = try await Self.next(in: &lines) { $0.hasPrefix("dropped \(key) ") }

            let droppedAt = UInt64(dropped.split(separator: " ").last ?? "") ?? 0
            delays.append((Double(droppedAt) - Double(acknowledged)) / 1e6)
        }
        other.send("read key-0")
        let reread = try await Self.next(in: &lines) { $0.hasPrefix("read key-0 ") }
        other.send("set shared from-the-other-process")
        _ = try await Self.next(in: &lines) { $0 == "set shared" }
        let seenHere = try await cache.value(forKey: "shared")

        delays.sort()
        let p50 = delays[delays.count / 2]
        let p99 = delays[delays.count * 99 / 100]
        print("invalidation delay over \(changes) changes: p50 \(p50) ms, p99 \(p99) ms, max \(delays.last ?? 0) ms")
        #expect(filledFromDatabase == changes, "the other process read each key into its memory first")
        #expect(reread == "read key-0 database", "after the change the other process read the database again")
        #expect(seenHere == Data("from-the-other-process".utf8))
        #expect(p99 < 250, "p99 \(p99) ms (goal on an idle loopback: under 50 ms)")
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }
}
#endif
