import Foundation
import HTTPTypes
import Strata
import StrataHTTP
import Testing
import _StrataInternals

/// A URL a user supplied that is not an absolute http(s) URL with a host is refused with
/// `invalidKey` and never reaches the transport; before, swift-http-types trapped on a URL
/// without a scheme, so `example.com/a.png` stopped the process.
@Suite struct HTTPSourceURLTests {
    /// Answers 200 to anything and counts what it was sent. Any task may use it.
    final class CountingTransport: HTTPTransport {
        private let sent = LockedState(0)

        var requests: Int { sent.withLock { $0 } }

        func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse {
            sent.withLock { $0 += 1 }
            return HTTPTransportResponse(head: HTTPResponse(status: .ok), body: Data("ok".utf8))
        }
    }

    static let hostile = [
        "example.com/a.png", "//host/a", "/images/a.png", "a.png", "ftp://host/a", "file:///etc/passwd",
        "mailto:someone@example.com", "http:///no-host", "javascript:alert(1)",
    ]

    @Test(arguments: hostile)
    func aSourceRefusesAURLItCannotFetch(_ text: String) async throws {
        let url = try #require(URL(string: text))
        let transport = CountingTransport()
        let source = HTTPSource(transport: transport)

        let error = await #expect(throws: StorageError.self) { try await source.value(for: url) }

        #expect(error?.code == .invalidKey)
        #expect(error?.key == url.description)
        #expect(transport.requests == 0)
    }

    @Test(arguments: hostile)
    func aCacheRefusesAURLItCannotFetchAndStoresNothing(_ text: String) async throws {
        let url = try #require(URL(string: text))
        let transport = CountingTransport()
        let records = MemoryStorage<URL, HTTPCacheRecord>(maximumCount: 10)
        let cache = HTTPSource(transport: transport).cache(in: records)

        let error = await #expect(throws: StorageError.self) { try await cache.value(for: url) }

        #expect(error?.code == .invalidKey)
        #expect(transport.requests == 0)
        #expect(records.count == 0)
    }

    @Test(arguments: ["https://example.com/a.png", "HTTP://EXAMPLE.COM/a", "http://127.0.0.1:8080/x?y=1"])
    func absoluteHTTPURLsStillReachTheTransport(_ text: String) async throws {
        let url = try #require(URL(string: text))
        let transport = CountingTransport()

        let body = try await HTTPSource(transport: transport).value(for: url)

        #expect(body == Data("ok".utf8))
        #expect(transport.requests == 1)
    }
}
