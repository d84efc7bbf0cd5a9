import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// `changes()` on SQLiteStorage: each key its transactions set, remove, expire, evict or clear,
/// once committed, in the order the transaction made them; nothing for a transaction rolled back.
@Suite(.onTestThreads) struct SQLiteChangesTests {
    static func storage(_ folder: TemporaryFolder, clock: ManualClock, maximumCount: Int? = nil) throws -> SQLiteStorage
    {
        var options = SQLiteStorage.Options(maximumCount: maximumCount, clock: clock)
        options.recencyResolution = .zero
        return try SQLiteStorage(path: folder.path("changes.sqlite"), options: options)
    }

    @Test func everyKindOfChangeIsToldInOrder() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try Self.storage(folder, clock: clock, maximumCount: 2)
        let stream = storage.changes()

        // The synchronous methods, which an async function would not pick.
        func act() throws {
            try storage.set(Data("1".utf8), forKey: "a")
            clock.advance(by: .seconds(1))
            try storage.set(Data("2".utf8), forKey: "b", timeToLive: .seconds(60))
            clock.advance(by: .seconds(1))
            try storage.update(forKey: "a") { $0 = Data("3".utf8) }  // a is now the most recent
            clock.advance(by: .seconds(1))
            try storage.set(Data("4".utf8), forKey: "c")  // a third value: b, the least recent, goes
            try storage.removeValue(forKey: "c")
            try storage.removeValue(forKey: "never stored")  // removes nothing, tells nothing
            try storage.set(Data("5".utf8), forKey: "d", timeToLive: .seconds(1))
            clock.advance(by: .seconds(10))
            #expect(try storage.removeExpired() == 1)
        }
        try act()
        // The async update: read, body, then a commit that checks the row did not change.
        try await storage.update(forKey: "a") { $0 = Data("6".utf8) }
        try await storage.removeAll()

        #expect(
            await firstChanges(10, of: stream) == [
                "a set", "b set", "a set", "c set", "b evicted", "c removed", "d set", "d expired", "a set",
                "a cleared",
            ]
        )
    }

    @Test func aWriteSweepsExpiredValuesAndTellsThem() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try Self.storage(folder, clock: clock)
        let stream = storage.changes()
        try await storage.set(Data("x".utf8), forKey: "x", timeToLive: .seconds(1))
        clock.advance(by: .seconds(2))
        // A value with a lifetime removes expired ones on its way in.
        try await storage.set(Data("y".utf8), forKey: "y", timeToLive: .seconds(5))
        // A lifetime that has run out stores nothing and removes the older value.
        try await storage.set(Data("z".utf8), forKey: "y", timeToLive: .zero)
        #expect(await firstChanges(4, of: stream) == ["x set", "y set", "x expired", "y removed"])
    }

    @Test func aTransactionRolledBackTellsNothing() async throws {
        let folder = try TemporaryFolder()
        let storage = try Self.storage(folder, clock: ManualClock())
        let stream = storage.changes()
        struct Refused: Error {}
        await #expect(throws: StorageError.self) {
            try await storage.update(forKey: "a") { (value: inout Data?) throws -> Void in
                value = Data("never".utf8)
                throw Refused()
            }
        }
        #expect(throws: StorageError.self) {
            try storage.update(forKey: "a") { (value: inout Data?) throws -> Void in
                value = Data("never".utf8)
                throw Refused()
            }
        }
        try await storage.set(Data("kept".utf8), forKey: "b")
        #expect(await firstChanges(1, of: stream) == ["b set"])
        #expect(try await storage.value(forKey: "a") == nil)
    }

    @Test func keysAreToldAsStored() async throws {
        let folder = try TemporaryFolder()
        let storage = try Self.storage(folder, clock: ManualClock())
        let stream = storage.changes()
        // "é" written decomposed is stored, and told, composed.
        try await storage.set(Data("1".utf8), forKey: "caf\u{65}\u{301}")
        #expect(await firstChanges(1, of: stream) == ["caf\u{e9} set"])
    }

    @MainActor
    @Test func anObservedValueFollowsAKeyThroughACodec() async throws {
        let folder = try TemporaryFolder()
        let storage = try Self.storage(folder, clock: ManualClock())
        let cities = storage.json(String.self)
        let observed = cities.observedValue(forKey: "capital")
        #expect(observed.value == nil)  // starts the observation
        try await cities.set("Kyiv", forKey: "capital")
        #expect(await Self.within(seconds: 10) { observed.value == "Kyiv" })
        try await cities.removeValue(forKey: "capital")
        #expect(await Self.within(seconds: 10) { observed.value == nil && observed.readCount >= 3 })
    }

    /// Whether `condition` holds within `seconds`, checking as other tasks run.
    @MainActor
    static func within(seconds: Int, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
