import Foundation
import LocalHTTPServer
import Strata
import StrataHTTP
import Testing

/// What the cache must not keep, on every transport that comes with the package: a partial
/// response, an answer that came from a redirect's target, and a record that a 304 says may no
/// longer be stored (RFC 9111, sections 3, 3.3 and 4.3.4).
@Suite struct HTTPCacheStoringRulesTests {
    @Test(arguments: TransportKind.allCases)
    func aPartialResponseIsNeverStoredAsTheResource(transport: TransportKind) async throws {
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let routes: [String: Route] = [
            "/video": { _ in
                .respond(
                    status: 206,
                    headers: [
                        ("Content-Range", "bytes 0-3/100"), ("Cache-Control", "max-age=600"), ("ETag", "\"v1\""),
                    ],
                    body: Array("abcd".utf8)
                )
            }
        ]

        let (first, second, hits) = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let cache = http.source().cache(in: records)
            let first = try await cache.value(for: http.url("/video"))
            let second = try await cache.value(for: http.url("/video"))
            return (first, second, http.server.hits("/video"))
        }

        #expect(first == Data("abcd".utf8))
        #expect(second == first)
        #expect(hits == 2, "a 206 answers only the request that got it")
        #expect(records.count == 0)
    }

    @Test(arguments: TransportKind.allCases)
    func aRedirectTargetsFreshnessIsNotGivenToTheRedirectingURL(transport: TransportKind) async throws {
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let routes: [String: Route] = [
            "/latest": { _ in .status(302, headers: [("Location", "/v2")]) },
            "/v2": { _ in .body("version 2", [("Cache-Control", "max-age=31536000")]) },
        ]

        let (first, second, latestHits) = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let cache = http.source().cache(in: records)
            let first = try await cache.value(for: http.url("/latest"))
            let second = try await cache.value(for: http.url("/latest"))
            return (first, second, http.server.hits("/latest"))
        }

        #expect(first == Data("version 2".utf8))
        #expect(second == first)
        #expect(latestHits == 2, "/latest is asked again: its 302 said nothing about caching")
        #expect(records.count == 0)
    }

    @Test(arguments: TransportKind.allCases, ["no-store", "private, max-age=600"])
    func a304ThatForbidsStoringRemovesTheRecordInASharedCache(transport: TransportKind, directive: String) async throws
    {
        let resource = Resource(entityTag: "\"v1\"", notModifiedHeaders: [("Cache-Control", directive)])
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let (first, second, hits) = try await HTTPFixture.run(routes: ["/a": resource.route], transport: transport) {
            http in
            let cache = http.source().cache(in: records, policy: .shared)
            let first = try await cache.value(for: http.url("/a"))
            #expect(records.count == 1)
            let second = try await cache.value(for: http.url("/a"))
            return (first, second, http.server.hits("/a"))
        }

        #expect(first == Data("version 1".utf8))
        #expect(second == first, "the 304 still answers the request that revalidated")
        #expect(hits == 2)
        #expect(records.count == 0)
    }

    @Test(arguments: TransportKind.allCases)
    func a304ThatSaysPrivateStillRefreshesAPrivateCache(transport: TransportKind) async throws {
        let resource = Resource(entityTag: "\"v1\"", notModifiedHeaders: [("Cache-Control", "private, max-age=600")])
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route], transport: transport) { http in
            let cache = http.source().cache(in: records, policy: .private)
            _ = try await cache.value(for: http.url("/a"))
            _ = try await cache.value(for: http.url("/a"))
            _ = try await cache.value(for: http.url("/a"))
            return http.server.hits("/a")
        }

        #expect(hits == 2, "the 304's max-age=600 makes the third request a fresh hit")
        #expect(records.count == 1)
    }
}
