import Foundation
import LocalHTTPServer
import Strata
import StrataHTTP
import StrataTestSupport
import Testing
import _StrataInternals

/// A resource the test server serves with validators: it answers a matching `If-None-Match` or
/// `If-Modified-Since` with 304, anything else with 200, and logs every request. The test can
/// change its body (and so its ETag) and its caching headers. Any task may use it.
final class Resource: Sendable {
    struct State {
        var body = "version 1"
        var entityTag: String? = "\"v1\""
        var lastModified: String?
        var headers: [(String, String)] = []
        var notModifiedHeaders: [(String, String)] = []
        var failing = false
    }

    let log = RequestLog()
    private let state: LockedState<State>

    init(
        entityTag: String? = "\"v1\"",
        lastModified: String? = nil,
        headers: [(String, String)] = [],
        notModifiedHeaders: [(String, String)] = []
    ) {
        state = LockedState(
            State(
                entityTag: entityTag,
                lastModified: lastModified,
                headers: headers,
                notModifiedHeaders: notModifiedHeaders
            )
        )
    }

    func change(body: String, entityTag: String?, headers: [(String, String)]? = nil) {
        state.withLock {
            $0.body = body
            $0.entityTag = entityTag
            if let headers { $0.headers = headers }
        }
    }

    func setFailing(_ failing: Bool) {
        state.withLock { $0.failing = failing }
    }

    var route: Route {
        { request in
            self.log.record(request)
            let state = self.state.withLock { $0 }
            if state.failing { return .status(500) }
            var validators: [(String, String)] = []
            if let entityTag = state.entityTag { validators.append(("ETag", entityTag)) }
            if let lastModified = state.lastModified { validators.append(("Last-Modified", lastModified)) }
            let matchesTag = state.entityTag != nil && request.header("If-None-Match") == state.entityTag
            let matchesDate =
                request.header("If-None-Match") == nil && state.lastModified != nil
                && request.header("If-Modified-Since") == state.lastModified
            if matchesTag || matchesDate {
                return .status(304, headers: validators + state.notModifiedHeaders)
            }
            return .body(state.body, validators + state.headers)
        }
    }
}

@Suite struct HTTPCacheTests {
    @Test func anETagIsRevalidatedAndA304ReusesTheStoredBody() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let (first, second, hits) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            let first = try await provider.value(for: http.url("/a"))
            let second = try await provider.value(for: http.url("/a"))
            return (first, second, http.server.hits("/a"))
        }

        #expect(first == Data("version 1".utf8))
        #expect(second == first)
        #expect(hits == 2)
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\""])
        #expect(records.count == 1)
    }

    @Test func aLastModifiedDateIsRevalidatedWithIfModifiedSince() async throws {
        let date = "Tue, 15 Nov 1994 12:45:26 GMT"
        let resource = Resource(entityTag: nil, lastModified: date)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let (second, hits) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            let second = try await provider.value(for: http.url("/a"))
            return (second, http.server.hits("/a"))
        }

        #expect(second == Data("version 1".utf8))
        #expect(hits == 2)
        #expect(resource.log.values(of: "If-Modified-Since") == [nil, date])
        #expect(resource.log.values(of: "If-None-Match") == [nil, nil])
    }

    @Test func aChangedResourceReplacesTheStoredBody() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let bodies = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            let first = try await provider.value(for: http.url("/a"))
            resource.change(body: "version 2", entityTag: "\"v2\"")
            let second = try await provider.value(for: http.url("/a"))
            let third = try await provider.value(for: http.url("/a"))
            return [first, second, third].map { String(decoding: $0, as: UTF8.self) }
        }

        #expect(bodies == ["version 1", "version 2", "version 2"])
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\"", "\"v2\""])
    }

    @Test func aFreshAnswerIsServedWithoutARequestUntilMaxAgePasses() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=60")])
        let clock = ManualClock()

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            var hits: [Int] = []
            _ = try await provider.value(for: http.url("/a"))
            hits.append(http.server.hits("/a"))
            clock.advance(by: .seconds(59))
            _ = try await provider.value(for: http.url("/a"))
            hits.append(http.server.hits("/a"))
            clock.advance(by: .seconds(1))
            _ = try await provider.value(for: http.url("/a"))
            hits.append(http.server.hits("/a"))
            // The 304 carried no Cache-Control: the stored max-age applies again from now.
            clock.advance(by: .seconds(59))
            _ = try await provider.value(for: http.url("/a"))
            hits.append(http.server.hits("/a"))
            return hits
        }

        #expect(hits == [1, 1, 2, 2])
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\""])
    }

    @Test func anAgeHeaderShortensTheFreshness() async throws {
        let resource = Resource(headers: [("Cache-Control", "max-age=60"), ("Age", "50")])
        let clock = ManualClock()

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            _ = try await provider.value(for: http.url("/a"))
            clock.advance(by: .seconds(9))
            _ = try await provider.value(for: http.url("/a"))
            let beforeExpiry = http.server.hits("/a")
            clock.advance(by: .seconds(1))
            _ = try await provider.value(for: http.url("/a"))
            return [beforeExpiry, http.server.hits("/a")]
        }

        #expect(hits == [1, 2])
    }

    /// RFC 9111, section 4.2.3: a response whose `Date` is 50 s before it arrives has already
    /// spent 50 s of its freshness, `Age` header or not.
    @Test func theApparentAgeFromTheDateHeaderShortensTheFreshness() async throws {
        let resource = Resource(headers: [("Cache-Control", "max-age=60"), ("Date", "Sun, 06 Nov 1994 08:49:37 GMT")])
        let clock = ManualClock(start: Date(timeIntervalSince1970: 784_111_777 + 50))

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            _ = try await provider.value(for: http.url("/a"))
            clock.advance(by: .seconds(9))
            _ = try await provider.value(for: http.url("/a"))
            let beforeExpiry = http.server.hits("/a")
            clock.advance(by: .seconds(1))
            _ = try await provider.value(for: http.url("/a"))
            return [beforeExpiry, http.server.hits("/a")]
        }

        #expect(hits == [1, 2])
    }

    @Test func expiresGivesTheFreshnessWhenThereIsNoMaxAge() async throws {
        let resource = Resource(
            headers: [("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Expires", "Sun, 06 Nov 1994 08:50:37 GMT")]
        )
        // Received the moment it was sent: the apparent age is zero.
        let clock = ManualClock(start: Date(timeIntervalSince1970: 784_111_777))

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            _ = try await provider.value(for: http.url("/a"))
            clock.advance(by: .seconds(59))
            _ = try await provider.value(for: http.url("/a"))
            let beforeExpiry = http.server.hits("/a")
            clock.advance(by: .seconds(1))
            _ = try await provider.value(for: http.url("/a"))
            return [beforeExpiry, http.server.hits("/a")]
        }

        #expect(hits == [1, 2])
    }

    @Test func noStoreIsNeverStored() async throws {
        let resource = Resource(headers: [("Cache-Control", "no-store, max-age=600")])
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            _ = try await provider.value(for: http.url("/a"))
            return http.server.hits("/a")
        }

        #expect(hits == 2)
        #expect(records.count == 0)
        #expect(resource.log.values(of: "If-None-Match") == [nil, nil])
    }

    @Test func noStoreRemovesAnEarlierRecord() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let body = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            resource.change(body: "private now", entityTag: nil, headers: [("Cache-Control", "no-store")])
            return try await provider.value(for: http.url("/a"))
        }

        #expect(body == Data("private now".utf8))
        #expect(records.count == 0)
    }

    @Test func noCacheIsStoredButRevalidatedEveryTime() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "no-cache, max-age=600")])
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let (bodies, hits) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            var bodies: [Data] = []
            for _ in 0..<3 {
                bodies.append(try await provider.value(for: http.url("/a")))
            }
            return (bodies, http.server.hits("/a"))
        }

        #expect(Set(bodies) == [Data("version 1".utf8)])
        #expect(hits == 3)
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\"", "\"v1\""])
        #expect(records.count == 1)
    }

    @Test func anAnswerWithNeitherValidatorsNorFreshnessIsNotStored() async throws {
        let resource = Resource(entityTag: nil)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let hits = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            _ = try await provider.value(for: http.url("/a"))
            return http.server.hits("/a")
        }

        #expect(hits == 2)
        #expect(records.count == 0)
    }

    @Test func aFailedAnswerIsNeverStored() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        resource.setFailing(true)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let error = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            await #expect(throws: StorageError.self) {
                try await http.source().cache(in: records).value(for: http.url("/a"))
            }
        }

        #expect(error?.code == .sourceFailed)
        #expect(error?.httpStatus == 500)
        #expect(records.count == 0)
    }

    @Test func aFailedRevalidationThrowsAndKeepsTheStoredRecord() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let (error, stored) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            let before = records.value(forKey: http.url("/a"))
            resource.setFailing(true)
            let error = await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/a")) }
            return (error, before == records.value(forKey: http.url("/a")))
        }

        #expect(error?.httpStatus == 500)
        #expect(stored)
    }

    @Test func recordsOnDiskSurviveANewProviderAndAreRevalidated() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-http-\(UUID().uuidString)")
        defer { FolderRemoval.remove(folder) }
        let resource = Resource(entityTag: "\"v1\"")

        let (second, hits) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let first = http.source().cache(in: try DiskStorage(url: folder).json(HTTPCacheRecord.self))
            _ = try await first.value(for: http.url("/a"))
            let restarted = http.source().cache(in: try DiskStorage(url: folder).json(HTTPCacheRecord.self))
            let second = try await restarted.value(for: http.url("/a"))
            return (second, http.server.hits("/a"))
        }

        #expect(second == Data("version 1".utf8))
        #expect(hits == 2)
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\""])
    }

    @Test func anUnreadableRecordIsReportedAndFetchedAgain() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let bytes = MemoryStorage<String, Data>()
        let reports = LockedState<[StorageError.Code]>([])

        let body = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            bytes.set(Data("not json".utf8), forKey: http.url("/a").absoluteString)
            let provider = http.source().cache(in: bytes.json(HTTPCacheRecord.self)) { error in
                reports.withLock { $0.append(error.code) }
            }
            return try await provider.value(for: http.url("/a"))
        }

        #expect(body == Data("version 1".utf8))
        #expect(reports.withLock { $0 } == [.decodingFailed])
        #expect(resource.log.values(of: "If-None-Match") == [nil])
    }

    @Test func concurrentRequestsThroughCoordinatedMakeOneRevalidation() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let gate = Gate()
        let route = resource.route
        let held: Route = { request in
            if request.header("If-None-Match") != nil { await gate.wait() }
            return await route(request)
        }
        let requests = 20

        let (bodies, hits) = try await HTTPFixture.run(routes: ["/a": held]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>()).coordinated()
            let url = http.url("/a")
            _ = try await provider.value(for: url)
            let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
                for _ in 0..<requests {
                    group.addTask { try await provider.value(for: url) }
                }
                #expect(await http.server.waitForHits(2, path: "/a"), "the revalidation never reached the server")
                #expect(await eventually { provider.waitersInFlight == requests })
                gate.open()
                return try await group.reduce(into: [Data]()) { $0.append($1) }
            }
            return (bodies, http.server.hits("/a"))
        }

        #expect(bodies.count == requests)
        #expect(Set(bodies) == [Data("version 1".utf8)])
        #expect(hits == 2)
    }
}
