import Dispatch
import Foundation
import GRDB
import Strata
import StrataTestSupport
import Testing

@testable import StrataSQLite

/// The database options an app tunes reach the database, and a storage that observes suspension
/// takes no lock while the app is suspended.
// Serialized: suspension is process-wide, so the suspension test must not run beside another test
// that opens a storage observing it.
@Suite(.serialized, .onTestThreads) struct SQLiteStorageConfigurationTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    @Test func theQueuesQualityReadersAndSuspensionReachTheDatabase() throws {
        var options = SQLiteStorage.Options()
        options.qualityOfService = .utility
        options.maximumReaderCount = 2
        options.observesSuspensionNotifications = true
        let storage = try SQLiteStorage(path: folder.path("tuned.sqlite"), options: options)
        let defaults = try SQLiteStorage(path: folder.path("default.sqlite"))

        #expect(storage.pool.configuration.qos == .utility)
        #expect(storage.pool.configuration.maximumReaderCount == 2)
        #expect(storage.pool.configuration.observesSuspensionNotifications)
        #expect(defaults.pool.configuration.qos == .userInitiated)
        #expect(defaults.pool.configuration.maximumReaderCount == 5)
        #expect(!defaults.pool.configuration.observesSuspensionNotifications)
    }

    @Test func noReaderStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var options = SQLiteStorage.Options()
            options.maximumReaderCount = 0
            _ = try SQLiteStorage(path: "/nonexistent/none.sqlite", options: options)
        }

        expectStop(stopped?.standardErrorContent, saying: "SQLiteStorage: maximumReaderCount must be at least 1, got 0")
    }

    @Test func aSuspendedStorageStillReadsRefusesWritesClearlyAndWritesAfterResuming() throws {
        var options = SQLiteStorage.Options()
        options.observesSuspensionNotifications = true
        let suspending = try SQLiteStorage(path: folder.path("shared.sqlite"), options: options)
        let other = try SQLiteStorage(path: folder.path("private.sqlite"))
        try suspending.set(Data("before".utf8), forKey: "kept")

        SQLiteStorage.suspendAll()
        defer { SQLiteStorage.resumeAll() }
        let refused = #expect(throws: StorageError.self) {
            try suspending.set(Data("while".utf8), forKey: "refused")
        }
        let read = try suspending.value(forKey: "kept")
        try other.set(Data("unaffected".utf8), forKey: "other")
        SQLiteStorage.resumeAll()
        try suspending.set(Data("after".utf8), forKey: "refused")

        #expect(refused?.code == .io)
        #expect(refused?.message.contains("suspended") == true, "\(String(describing: refused))")
        #expect(read == Data("before".utf8))
        #expect(try other.value(forKey: "other") == Data("unaffected".utf8))
        #expect(try suspending.value(forKey: "refused") == Data("after".utf8))
    }
}
