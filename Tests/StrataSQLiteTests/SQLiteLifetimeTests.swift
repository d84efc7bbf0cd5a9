import Foundation
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
}
