#if Postgres
import Foundation
import Strata
import PostgresNIO
import StrataPostgres
import StrataTestSupport
import Testing

/// `changes()` on PostgresStorage: every change to the table, from any instance, through the
/// trigger's notifications, with what happened to each key.
@Suite struct PostgresChangesTests {
    /// Collects a stream's changes as "key kind" while the test runs.
    final class Collected: Sendable {
        let changes = LockedBox<[String]>([])
        let task: Task<Void, Never>

        init(_ stream: AsyncStream<StorageChange<String>>) {
            let changes = changes
            task = Task {
                for await change in stream { changes.mutate { $0.append("\(change.key) \(change.kind)") } }
            }
        }

        /// Waits until `count` changes have come after `marker`'s, at most ten seconds; returns them.
        func after(_ marker: String, count: Int) async -> [String] {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let seen = changes.value
                if let start = seen.firstIndex(of: marker), seen.count - start - 1 >= count {
                    return Array(seen[(start + 1)...].prefix(count))
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
            let seen = changes.value
            return seen.firstIndex(of: marker).map { Array(seen[($0 + 1)...]) } ?? seen
        }
    }

    /// Writes `probe` until the stream reports it: from then on the LISTEN is in effect.
    static func waitUntilListening(_ collected: Collected, writer: PostgresStorage, probe: String) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            try await writer.set(Data("probe".utf8), forKey: probe)
            try await Task.sleep(for: .milliseconds(50))
            if collected.changes.value.contains("\(probe) set") { return }
        }
        Issue.record("the stream never reported \(probe)")
    }

    @Test func everyInstancesChangesAreToldWithWhatHappened() async throws {
        let table = PostgresTestServer.uniqueTable()
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage(table: table) { $0.clock = clock }
        let other = try await PostgresTestServer.storage(table: table)
        let collected = Collected(storage.changes())
        defer { collected.task.cancel() }
        try await Self.waitUntilListening(collected, writer: other, probe: "probe")
        let marker = "probe removed"
        try await other.removeValue(forKey: "probe")

        try await other.set(Data("1".utf8), forKey: "a")  // another instance's write
        try await storage.update(forKey: "a") { $0 = Data("2".utf8) }
        try await other.removeValue(forKey: "a")
        try await storage.removeValue(forKey: "never stored")  // removes nothing, tells nothing
        try await storage.set(Data("3".utf8), forKey: "short", timeToLive: .seconds(1))
        try await storage.set(Data("4".utf8), forKey: "kept")
        clock.advance(by: .seconds(2))
        #expect(try await storage.removeExpired() == 1)
        // A value with a lifetime sweeps expired ones on its way in.
        try await storage.set(Data("5".utf8), forKey: "brief", timeToLive: .seconds(1))
        clock.advance(by: .seconds(2))
        try await storage.set(Data("6".utf8), forKey: "next", timeToLive: .seconds(60))
        try await other.removeAll()

        let told = await collected.after(marker, count: 11)
        try #require(told.count == 11, "told: \(told)")
        #expect(
            told[..<7] == [
                "a set", "a set", "a removed", "short set", "kept set", "short expired", "brief set",
            ]
        )
        // One statement inserts "next" and sweeps "brief": its rows' changes come in either order.
        #expect(Set(told[7..<9]) == ["brief expired", "next set"])
        // The TRUNCATE names each key it clears, in no particular order.
        #expect(Set(told[9...]) == ["kept cleared", "next cleared"])

        await PostgresTestServer.dispose(other)
        await storage.close()
    }

    @Test func keysOfAnyShapeAreToldAsStored() async throws {
        let storage = try await PostgresTestServer.storage()
        let collected = Collected(storage.changes())
        defer { collected.task.cancel() }
        try await Self.waitUntilListening(collected, writer: storage, probe: "probe")
        // The probe may have been written more than once; its one removal marks where to start.
        try await storage.removeValue(forKey: "probe")
        // A long key (its base64 spans lines), spaces, a decomposed "é", and one that ends as a
        // SharedCache's "ready" message begins.
        let keys = [String(repeating: "long-", count: 200), "with space", "caf\u{65}\u{301}", "x ready"]
        for key in keys { try await storage.set(Data("v".utf8), forKey: key) }
        let told = await collected.after("probe removed", count: keys.count)
        #expect(told == keys.map { "\($0.precomposedStringWithCanonicalMapping) set" })
        await PostgresTestServer.dispose(storage)
    }

    @Test func notificationsThatAreNoChangeAreIgnored() async throws {
        let storage = try await PostgresTestServer.storage()
        let collected = Collected(storage.changes())
        defer { collected.task.cancel() }
        try await Self.waitUntilListening(collected, writer: storage, probe: "probe")
        try await storage.removeValue(forKey: "probe")
        let channel = storage.channel
        // What anyone may send on the channel: no sender, an unknown kind, a SharedCache's own
        // "ready" and "beat" messages (even one that looks like a change), every key at once.
        let hostile = [
            "", "nospace", "app q\(Data("k".utf8).base64EncodedString())",
            "app ready s\(Data("k".utf8).base64EncodedString())", "app beat 12", "app *",
        ]
        for payload in hostile {
            try await storage.perform("notify", key: nil) { connection in
                try await connection.query("SELECT pg_notify(\(channel), \(payload))", logger: PostgresStorage.logger)
            }
        }
        try await storage.set(Data("v".utf8), forKey: "after")
        #expect(await collected.after("probe removed", count: 1) == ["after set"])
        #expect(collected.changes.value.last == "after set")
        await PostgresTestServer.dispose(storage)
    }

    @Test func theStreamEndsWhenTheStorageCloses() async throws {
        let storage = try await PostgresTestServer.storage()
        let stream = storage.changes()
        let ended = Task {
            for await _ in stream {}
            return true
        }
        await PostgresTestServer.dispose(storage)
        let result = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await ended.value }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        #expect(result, "the stream still runs after close()")
    }
}
#endif
