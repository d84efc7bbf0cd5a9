import Foundation
import Logging
import MetricsTestKit
import StrataTestSupport
import Testing

@testable import Strata

/// What a storage logs: each event once, at its level, naming the storage and the reason; the key
/// only when the logger lets `.debug` through; never a value.
@Suite(.onTestThreads) struct StorageLoggingTests {
    // MARK: Eviction storms

    @Test func evictionStormIsLoggedOncePerWindowWithoutKeys() throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .info)
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(maximumCount: 1, clock: clock, logger: logger)

        for index in 0..<3_000 {
            cache.set(index, forKey: "user-\(index)")
        }

        #expect(handler.entries.count == 1)
        let entry = try #require(handler.entries.first)
        #expect(entry.level == .warning)
        #expect(entry.metadata["storage"] == "MemoryStorage")
        #expect(entry.metadata["reason"]?.contains("eviction storm") == true)
        #expect(entry.metadata["key"] == nil)
        #expect(!entry.fullText.contains("user-"))

        clock.advance(by: .seconds(10))
        for index in 0..<1_002 {
            cache.set(index, forKey: "user-\(index)")
        }

        #expect(handler.entries.count == 2)
    }

    @Test func evictionsUpToTheThresholdAreNotAStorm() throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .trace)
        let cache = MemoryStorage<String, Int>(maximumCount: 1, clock: ManualClock(), logger: logger)

        for index in 0...Int(StorageObserver.stormThreshold) {
            cache.set(index, forKey: "user-\(index)")
        }

        #expect(cache.statistics.evictions == StorageObserver.stormThreshold)
        #expect(handler.entries.isEmpty)
    }

    // MARK: Damaged files

    private static func damagedDisk(
        logLevel: Logger.Level,
        in folder: TemporaryFolder
    ) throws -> (
        DiskStorage, RecordingLogHandler
    ) {
        let (logger, handler) = RecordingLogHandler.logger(level: logLevel)
        let storage = try DiskStorage(url: folder.url, options: .init(logger: logger))
        try storage.set(Data("the secret value".utf8), forKey: "ada@example.com")
        let path = folder.path + "/" + relativePath(forKey: "ada@example.com")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: path))
        return (storage, handler)
    }

    @Test func damagedFileDroppedInCacheModeIsLoggedOnceWithoutTheKeyAboveDebug() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (storage, handler) = try Self.damagedDisk(logLevel: .info, in: folder)

        #expect(try storage.value(forKey: "ada@example.com") == nil)
        #expect(try storage.value(forKey: "ada@example.com") == nil)

        #expect(handler.entries.count == 1)
        let entry = try #require(handler.entries.first)
        #expect(entry.level == .warning)
        #expect(entry.metadata["storage"] == "DiskStorage")
        #expect(entry.metadata["reason"]?.isEmpty == false)
        #expect(entry.metadata["key"] == nil)
        #expect(!entry.fullText.contains("ada@example.com"))
        #expect(!entry.fullText.contains("secret value"))
    }

    @Test func damagedFileLogNamesTheKeyAtDebug() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (storage, handler) = try Self.damagedDisk(logLevel: .debug, in: folder)

        _ = try storage.value(forKey: "ada@example.com")

        #expect(handler.entries.count == 1)
        #expect(handler.entries.first?.metadata["key"] == "ada@example.com")
        #expect(handler.entries.first?.fullText.contains("secret value") == false)
    }

    @Test func damagedFilesFoundWhenOpeningAreLoggedOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let first = try DiskStorage(url: folder.url)
        try first.set(Data("the secret value".utf8), forKey: "ada@example.com")
        // Damage the header, which opening reads (a payload is checked only when read).
        try Data("garbage".utf8).write(
            to: URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "ada@example.com"))
        )
        let (logger, handler) = RecordingLogHandler.logger(level: .info)

        let reopened = try DiskStorage(url: folder.url, options: .init(logger: logger))

        #expect(reopened.statistics.damagedFiles == 1)
        #expect(handler.entries.count == 1)
        #expect(handler.entries.first?.level == .warning)
        #expect(handler.entries.first?.metadata["damaged_files"] == "1")
        #expect(handler.entries.first?.fullText.contains("ada@example.com") == false)
    }

    // MARK: Providers

    @Test(arguments: [Logger.Level.info, .debug])
    func failedCacheWriteThatDidNotFailTheFetchIsLoggedOnce(level: Logger.Level) async throws {
        let (logger, handler) = RecordingLogHandler.logger(level: level)
        let cache = FailingStorage<String, String>(failing: [.set])
        let provider = AnyProvider { (id: String) in "the value for \(id)" }.cache(cache, logger: logger)

        let value = try await provider.value(for: "ada")

        #expect(value == "the value for ada")
        #expect(handler.entries.count == 1)
        let entry = try #require(handler.entries.first)
        #expect(entry.level == .warning)
        #expect(entry.message.contains("CachedProvider"))
        #expect(entry.metadata["storage"] == "FailingStorage")
        #expect(entry.metadata["code"] == "io")
        #expect(entry.metadata["key"] == (level == .debug ? "ada" : nil))
        #expect(!entry.fullText.contains("the value for"))
    }

    @Test func failedCoordinatedFetchIsLoggedOnceForAllItsWaiters() async throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .info)
        let probe = SourceProbe(held: true, failing: 1)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated(logger: logger)

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<5 {
                group.addTask { _ = try? await provider.value(for: "ada") }
            }
            while provider.waitersInFlight < 5 { await Task.yield() }
            probe.open()
        }

        #expect(handler.entries.count == 1)
        #expect(handler.entries.first?.level == .info)
        #expect(handler.entries.first?.metadata["waiters"] == "5")
        #expect(handler.entries.first?.metadata["key"] == nil)
    }

    // MARK: Reconnects

    @Test func reconnectHookLogsOnceAndCounts() throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .info)
        let factory = TestMetrics()
        let observer = StorageObserver(
            storage: "PostgresStorage",
            logger: logger,
            metrics: StorageMetrics(prefix: "db", factory: factory)
        )

        observer.recordReconnect(after: "connection reset by peer", attempts: 3)

        #expect(handler.entries.count == 1)
        #expect(handler.entries.first?.level == .notice)
        #expect(handler.entries.first?.metadata["reason"] == "connection reset by peer")
        #expect(factory.counterTotal(label: "db.reconnects") == 1)
    }
}
