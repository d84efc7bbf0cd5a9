import Foundation
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// A file written once per request and never read stays near what is alive: each write with a
/// lifetime removes up to two expired rows in its transaction.
@Suite(.onTestThreads) struct SQLiteMaintenanceTests {
    @Test func aWriteOnlyFileStaysBoundedWithoutReads() throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try SQLiteStorage(
            path: folder.path("requests.sqlite"),
            options: SQLiteStorage.Options(timeToLive: .seconds(1), clock: clock)
        )
        var largest = 0

        // A new key every 10 ms of the clock, each living one second: about 100 alive.
        for request in 0..<3_000 {
            try storage.set(Data("response \(request)".utf8), forKey: "request-\(request)")
            clock.advance(by: .milliseconds(10))
            if request % 50 == 0 { largest = max(largest, try storage.statistics().count) }
        }
        let statistics = try storage.statistics()

        #expect(max(largest, statistics.count) <= 2 * 100 + 2, "the file held \(largest) rows, about 100 alive")
        #expect(Int(statistics.expirations) == 3_000 - statistics.count)
        #expect(try storage.value(forKey: "request-2999") == Data("response 2999".utf8))
    }

    @Test func valuesWithoutALifetimeAreNeverSwept() throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock()
        let storage = try SQLiteStorage(path: folder.path("plain.sqlite"), options: SQLiteStorage.Options(clock: clock))
        for index in 0..<100 {
            try storage.set(Data("v".utf8), forKey: "k\(index)")
            clock.advance(by: .seconds(60))
        }

        #expect(try storage.statistics().count == 100)
        #expect(try storage.statistics().expirations == 0)
    }
}
