import Foundation
import Logging
import Strata
import StrataHTTP
import Testing

/// What an `HTTPCache` logs: a storage failure that did not fail the request, once, at `.warning`,
/// with the URL only when the logger lets `.debug` through.
@Suite struct HTTPCacheLoggingTests {
    /// Keeps every message a logger is given. Copies share one record.
    struct RecordingLogHandler: LogHandler {
        final class Record: Sendable {
            let entries = LockedState([(level: Logger.Level, text: String, key: String?)]())
        }

        let record = Record()
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level

        func log(event: LogEvent) {
            let metadata = event.metadata ?? [:]
            let text = ([event.message.description] + metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
            record.entries.withLock { $0.append((event.level, text, metadata["key"].map { "\($0)" })) }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
    }

    @Test(arguments: [Logger.Level.info, .debug])
    func anUnreadableRecordIsLoggedOnce(level: Logger.Level) async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let bytes = MemoryStorage<String, Data>()
        let handler = RecordingLogHandler(logLevel: level)
        let logger = Logger(label: "strata.test") { _ in handler }

        let (body, url) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            bytes.set(Data("not json".utf8), forKey: http.url("/a").absoluteString)
            let provider = http.source().cache(in: bytes.json(HTTPCacheRecord.self), logger: logger)
            return (try await provider.value(for: http.url("/a")), http.url("/a"))
        }

        #expect(body == Data("version 1".utf8))
        let entries = handler.record.entries.withLock { $0 }
        #expect(entries.count == 1)
        #expect(entries.first?.level == .warning)
        #expect(entries.first?.text.contains("HTTPCache") == true)
        #expect(entries.first?.text.contains("version 1") == false)
        #expect(entries.first?.key == (level == .debug ? url.absoluteString : nil))
        #expect(entries.first?.text.contains(url.absoluteString) == (level == .debug))
    }
}
