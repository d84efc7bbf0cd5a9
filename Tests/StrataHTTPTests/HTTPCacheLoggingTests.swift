import Foundation
import Logging
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

/// What an `HTTPCache` logs: a storage failure that did not fail the request, once, at `.warning`,
/// with the URL only when the logger lets `.debug` through.
@Suite struct HTTPCacheLoggingTests {
    @Test(arguments: [Logger.Level.info, .debug])
    func anUnreadableRecordIsLoggedOnce(level: Logger.Level) async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let bytes = MemoryStorage<String, Data>()
        let (logger, handler) = RecordingLogHandler.logger(level: level)

        let (body, url) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            bytes.set(Data("not json".utf8), forKey: http.url("/a").absoluteString)
            let provider = http.source().cache(in: bytes.json(HTTPCacheRecord.self), logger: logger)
            return (try await provider.value(for: http.url("/a")), http.url("/a"))
        }

        #expect(body == Data("version 1".utf8))
        let entries = handler.entries
        #expect(entries.count == 1)
        #expect(entries.first?.level == .warning)
        #expect(entries.first?.fullText.contains("HTTPCache") == true)
        #expect(entries.first?.fullText.contains("version 1") == false)
        #expect(entries.first?.metadata["key"] == (level == .debug ? url.absoluteString : nil))
        #expect(entries.first?.fullText.contains(url.absoluteString) == (level == .debug))
    }
}
