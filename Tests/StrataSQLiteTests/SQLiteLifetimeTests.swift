import Foundation
import GRDB
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// `lifetime(forKey:)` reads how long a row has left.
@Suite(.onTestThreads) struct SQLiteLifetimeTests {
    @Test func aRowReportsWhatIsLeftUnlimitedOrNothing() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try SQLiteStorage(
            path: folder.path("lifetimes.sqlite"),
            options: SQLiteStorage.Options(clock: clock)
        )
        func write() throws {
            try storage.set(Data("token".utf8), forKey: "token", timeToLive: .seconds(10))
            try storage.set(Data("kept".utf8), forKey: "kept")
        }
        try write()
        clock.advance(by: .seconds(4))

        #expect(try await storage.lifetime(forKey: "token") == .remaining(.seconds(6)))
        #expect(try await storage.lifetime(forKey: "kept") == .unlimited)
        #expect(try await storage.lifetime(forKey: "missing") == nil)
        clock.advance(by: .seconds(6))
        #expect(try await storage.lifetime(forKey: "token") == nil)
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOldValue(lifetime: Duration) async throws {
        let folder = try TemporaryFolder()
        let storage = try SQLiteStorage(path: folder.path("ran-out.sqlite"))
        try await storage.set(Data("old".utf8), forKey: "k")

        try await storage.set(Data("new".utf8), forKey: "k", timeToLive: lifetime)
        try await storage.setValues(["a": Data("a".utf8)], timeToLive: lifetime)

        #expect(try await storage.value(forKey: "k") == nil)
        #expect(try await storage.statistics().count == 0)
    }

    /// A row another program wrote with a value that is not a blob: an update (sync or async)
    /// fails with `corrupted`, runs nothing, writes nothing and leaves the row's lifetime as it was.
    @Test func anUpdateOfARowThatIsNotABlobIsCorruptedAndChangesNothing() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path("foreign.sqlite")
        let clock = ManualClock()
        let storage = try SQLiteStorage(path: path, options: SQLiteStorage.Options(clock: clock))
        func plant() throws {
            try storage.set(Data("placeholder".utf8), forKey: "k", timeToLive: .seconds(10))
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: "UPDATE strata_values SET value = 42 WHERE key = ?", arguments: [Data("k".utf8)])
            }
            try queue.close()
        }
        try plant()
        let ran = Flag()

        let asyncError = await #expect(throws: StorageError.self) {
            try await storage.update(forKey: "k") { value in
                ran.raise()
                value = Data("new".utf8)
            }
        }
        func syncUpdate() throws {
            try storage.update(forKey: "k") { value in
                ran.raise()
                value = Data("new".utf8)
            }
        }
        let syncError = #expect(throws: StorageError.self) { try syncUpdate() }

        #expect(asyncError?.code == .corrupted, "\(String(describing: asyncError))")
        #expect(syncError?.code == .corrupted, "\(String(describing: syncError))")
        #expect(!ran.isRaised, "the body never saw a value it could not be given")
        #expect(try await storage.lifetime(forKey: "k") == .remaining(.seconds(10)))
    }
}
