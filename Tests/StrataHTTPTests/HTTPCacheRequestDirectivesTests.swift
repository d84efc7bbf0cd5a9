import Foundation
import HTTPTypes
import LocalHTTPServer
import Strata
import StrataHTTP
import Testing

/// A request's own `Cache-Control` (RFC 9111, section 5.2.1): `max-age`, `min-fresh`, `max-stale`,
/// `only-if-cached`, `no-cache` and `no-store`, given per request or in the source's headers.
@Suite struct HTTPCacheRequestDirectivesTests {
    /// What the server saw and what the second request got.
    struct Outcome {
        var requests: Int
        var body: Data?
        var error: StorageError?
        var log: RequestLog
    }

    /// Stores the resource at time 0 (one request), lets `elapsed` pass on the cache's clock, then
    /// asks again with `cacheControl` (or with none, through `value(for:)`).
    func askAgain(
        after elapsed: Duration,
        cacheControl: String?,
        response headers: [(String, String)],
        policy: HTTPCachePolicy = .shared,
        sourceHeaders: HTTPFields = [:]
    ) async throws -> Outcome {
        let resource = Resource(entityTag: "\"v1\"", headers: headers)
        let clock = ManualClock()
        return try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            var source = http.source()
            source.headers.append(contentsOf: sourceHeaders)
            let cache = source.cache(in: MemoryStorage<URL, HTTPCacheRecord>(), policy: policy, clock: clock)
            _ = try await cache.value(for: http.url("/a"))
            clock.advance(by: elapsed)
            var outcome = Outcome(requests: 0, log: resource.log)
            do throws(StorageError) {
                if let cacheControl {
                    outcome.body = try await cache.value(for: http.url("/a"), cacheControl: cacheControl)
                } else {
                    outcome.body = try await cache.value(for: http.url("/a"))
                }
            } catch {
                outcome.error = error
            }
            outcome.requests = resource.log.requests.count
            return outcome
        }
    }

    @Test func minFreshAsksTheServerWhenTheResponseWouldGoStaleTooSoon() async throws {
        let response = [("Cache-Control", "max-age=100")]

        let tooSoon = try await askAgain(after: .seconds(50), cacheControl: "min-fresh=60", response: response)
        let enough = try await askAgain(after: .seconds(50), cacheControl: "min-fresh=40", response: response)

        #expect(tooSoon.requests == 2)
        #expect(tooSoon.log.requests.last?.header("If-None-Match") == "\"v1\"")
        #expect(tooSoon.body == Data("version 1".utf8))
        #expect(enough.requests == 1)
        #expect(enough.body == Data("version 1".utf8))
    }

    @Test func maxAgeAsksTheServerForAnOlderResponse() async throws {
        let response = [("Cache-Control", "max-age=100")]

        let older = try await askAgain(after: .seconds(30), cacheControl: "max-age=20", response: response)
        let younger = try await askAgain(after: .seconds(30), cacheControl: "max-age=60", response: response)
        let always = try await askAgain(after: .seconds(1), cacheControl: "max-age=0", response: response)

        #expect(older.requests == 2)
        #expect(younger.requests == 1)
        #expect(always.requests == 2)
    }

    @Test func theAgeARequestSeesIncludesTheAgeTheResponseArrivedWith() async throws {
        // Fresh for 50 more seconds, but already 50 seconds old when it arrived.
        let response = [("Cache-Control", "max-age=100"), ("Age", "50")]

        let tooOld = try await askAgain(after: .seconds(5), cacheControl: "max-age=40", response: response)
        let youngEnough = try await askAgain(after: .seconds(5), cacheControl: "max-age=60", response: response)

        #expect(tooOld.requests == 2)
        #expect(youngEnough.requests == 1)
    }

    @Test func maxStaleServesAStaleResponseWithinItsAllowance() async throws {
        let response = [("Cache-Control", "max-age=10")]  // 20 seconds stale after 30

        let within = try await askAgain(after: .seconds(30), cacheControl: "max-stale=30", response: response)
        let beyond = try await askAgain(after: .seconds(30), cacheControl: "max-stale=10", response: response)
        let anyStaleness = try await askAgain(after: .seconds(86_400), cacheControl: "max-stale", response: response)
        let without = try await askAgain(after: .seconds(30), cacheControl: nil, response: response)

        #expect(within.requests == 1)
        #expect(within.body == Data("version 1".utf8))
        #expect(beyond.requests == 2)
        #expect(anyStaleness.requests == 1)
        #expect(without.requests == 2)
    }

    @Test func maxStaleNeverServesAResponseThatForbidsStaleness() async throws {
        let mustRevalidate = try await askAgain(
            after: .seconds(30),
            cacheControl: "max-stale",
            response: [("Cache-Control", "max-age=10, must-revalidate")]
        )
        let noCache = try await askAgain(
            after: .seconds(30),
            cacheControl: "max-stale",
            response: [("Cache-Control", "no-cache")]
        )
        let sharedMaximumAge = try await askAgain(
            after: .seconds(30),
            cacheControl: "max-stale",
            response: [("Cache-Control", "s-maxage=10")]
        )
        let privateCache = try await askAgain(
            after: .seconds(30),
            cacheControl: "max-stale",
            response: [("Cache-Control", "max-age=10, s-maxage=10, proxy-revalidate")],
            policy: .private
        )

        #expect(mustRevalidate.requests == 2)
        #expect(noCache.requests == 2)
        #expect(sharedMaximumAge.requests == 2)
        #expect(privateCache.requests == 1)  // s-maxage and proxy-revalidate are for shared caches
    }

    @Test func onlyIfCachedNeverAsksTheServer() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10")])
        let clock = ManualClock()

        try await HTTPFixture.run(routes: ["/a": resource.route, "/b": resource.route]) { http in
            let cache = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            let missing = await #expect(throws: StorageError.self) {
                try await cache.value(for: http.url("/b"), cacheControl: "only-if-cached")
            }
            #expect(missing?.code == .notFound)
            #expect(missing?.message.contains("no response is stored") == true)
            #expect(resource.log.requests.isEmpty)

            _ = try await cache.value(for: http.url("/a"))
            let fresh = try await cache.value(for: http.url("/a"), cacheControl: "only-if-cached")
            clock.advance(by: .seconds(30))
            let stale = await #expect(throws: StorageError.self) {
                try await cache.value(for: http.url("/a"), cacheControl: "only-if-cached")
            }
            let allowed = try await cache.value(for: http.url("/a"), cacheControl: "only-if-cached, max-stale")

            #expect(fresh == Data("version 1".utf8))
            #expect(stale?.code == .notFound)
            #expect(stale?.message.contains("stale") == true)
            #expect(allowed == Data("version 1".utf8))
            #expect(resource.log.requests.count == 1)
        }
    }

    @Test func onlyIfCachedDoesNotRevalidateWithinStaleWhileRevalidate() async throws {
        let outcome = try await askAgain(
            after: .seconds(30),
            cacheControl: "only-if-cached",
            response: [("Cache-Control", "max-age=10, stale-while-revalidate=600")]
        )

        #expect(outcome.error?.code == .notFound)
        #expect(outcome.requests == 1)
    }

    @Test func theSourcesOwnDirectivesApplyToEveryRequest() async throws {
        let response = [("Cache-Control", "max-age=10")]

        let stale = try await askAgain(
            after: .seconds(30),
            cacheControl: nil,
            response: response,
            sourceHeaders: [.cacheControl: "max-stale=60"]
        )
        let soon = try await askAgain(
            after: .seconds(5),
            cacheControl: nil,
            response: response,
            sourceHeaders: [.cacheControl: "min-fresh=8"]
        )
        let resource = Resource(entityTag: "\"v1\"", headers: response)
        let offline = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            var source = http.source()
            source.headers[.cacheControl] = "only-if-cached"
            let cache = source.cache(in: MemoryStorage<URL, HTTPCacheRecord>())
            return await #expect(throws: StorageError.self) { try await cache.value(for: http.url("/a")) }
        }

        #expect(stale.requests == 1)
        #expect(soon.requests == 2)
        #expect(offline?.code == .notFound)
        #expect(resource.log.requests.isEmpty)
    }

    @Test func aRequestsDirectivesAreSentAndItsNoStoreKeepsTheResponseOut() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=600")])
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let cache = http.source().cache(in: records)
            _ = try await cache.value(for: http.url("/a"), cacheControl: "no-store")
            #expect(records.count == 0)

            _ = try await cache.value(for: http.url("/a"))
            let refreshed = try await cache.value(for: http.url("/a"), cacheControl: "no-cache")

            #expect(refreshed == Data("version 1".utf8))
            #expect(records.count == 1)
        }

        #expect(resource.log.values(of: "Cache-Control") == ["no-store", nil, "no-cache"])
        #expect(resource.log.values(of: "If-None-Match") == [nil, nil, "\"v1\""])
    }

    @Test func aDirectiveThatTriesToAddAHeaderAddsNone() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=600")])

        let body = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let cache = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>())
            return try await cache.value(for: http.url("/a"), cacheControl: "no-cache\r\nX-Injected: 1")
        }

        #expect(body == Data("version 1".utf8))
        #expect(resource.log.requests.count == 1)
        #expect(resource.log.values(of: "X-Injected") == [nil])
        #expect(resource.log.values(of: "Cache-Control").first??.contains("\n") == false)
    }

    @Test func malformedDirectivesAreReadStrictly() async throws {
        let response = [("Cache-Control", "max-age=100")]

        // An invalid number reads as 0 (RFC 9111, section 1.2.2): max-stale=x allows no staleness,
        // min-fresh=-1 asks for nothing, max-age=x accepts only a response of age 0.
        let staleness = try await askAgain(after: .seconds(101), cacheControl: "max-stale=x", response: response)
        let freshness = try await askAgain(after: .seconds(50), cacheControl: "min-fresh=-1", response: response)
        let age = try await askAgain(after: .seconds(1), cacheControl: "max-age=x", response: response)
        let unknown = try await askAgain(after: .seconds(1), cacheControl: "whatever=\"a, b\", ,", response: response)

        #expect(staleness.requests == 2)
        #expect(freshness.requests == 1)
        #expect(age.requests == 2)
        #expect(unknown.requests == 1)
    }
}
