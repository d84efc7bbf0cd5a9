import AsyncHTTPClient
import Foundation
import HTTPTypes
import LocalHTTPServer
import NIOPosix
import Strata
import StrataAsyncHTTPClient
import StrataHTTP
import StrataTestSupport
import Testing
import _StrataInternals

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A route that answers each request with a body naming the request header `header`'s value,
/// with `headers` added, and logs every request.
private func echoing(_ header: String, headers: [(String, String)], log: RequestLog) -> Route {
    { request in
        log.record(request)
        return .body("for \(request.header(header) ?? "nobody")", headers)
    }
}

/// A source on the fixture's client that sends `headers` with every request.
private func source(_ http: HTTPFixture, _ headers: [(String, String)]) -> HTTPSource {
    var source = http.source()
    for (name, value) in headers {
        source.headers.append(HTTPField(name: HTTPField.Name(name)!, value: value))
    }
    return source
}

/// A throwaway folder, removed when the test ends.
private func withFolder<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-http-\(UUID().uuidString)")
    defer { FolderRemoval.remove(folder) }
    return try await body(folder)
}

private func text(_ data: Data) -> String {
    String(decoding: data, as: UTF8.self)
}

@Suite(.onTestThreads) struct HTTPCacheSharingTests {
    @Test func twoUsersWithDifferentTokensThroughOneSharedDiskStoreEachGetTheirOwnResponse() async throws {
        let log = RequestLog()
        let route = echoing("Authorization", headers: [("Cache-Control", "max-age=600"), ("ETag", "\"1\"")], log: log)

        let (bodies, stored) = try await withFolder { folder in
            try await HTTPFixture.run(routes: ["/me": route]) { http in
                let records = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
                let alice = source(http, [("Authorization", "Bearer alice")]).cache(in: records)
                let bob = source(http, [("Authorization", "Bearer bob")]).cache(in: records)
                var bodies: [String] = []
                for provider in [alice, bob, alice, bob] {
                    bodies.append(text(try await provider.value(for: http.url("/me"))))
                }
                return (bodies, try DiskStorage(url: folder).count)
            }
        }

        #expect(bodies == ["for Bearer alice", "for Bearer bob", "for Bearer alice", "for Bearer bob"])
        #expect(log.requests.count == 4)
        #expect(stored == 0)
    }

    /// Credentials that URLSession adds from its configuration are the request's credentials too:
    /// a shared cache does not store a response to them unless the response allows it.
    @Test func anAuthorizationInTheSessionsConfigurationIsACredential() async throws {
        let log = RequestLog()
        let route = echoing("Authorization", headers: [("Cache-Control", "max-age=600")], log: log)
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer carol"]
        let transport = URLSessionTransport(configuration: configuration)
        #expect(transport.sendsCredentials)
        #expect(!URLSessionTransport().sendsCredentials)

        let bodies = try await HTTPFixture.run(routes: ["/me": route]) { http in
            let carol = HTTPSource(transport: transport).cache(in: records)
            return [
                text(try await carol.value(for: http.url("/me"))),
                text(try await carol.value(for: http.url("/me"))),
            ]
        }

        #expect(bodies == ["for Bearer carol", "for Bearer carol"])
        #expect(log.requests.count == 2)
        #expect(records.count == 0)
    }

    @Test func aResponseThatSaysItIsPublicIsSharedBetweenUsers() async throws {
        let log = RequestLog()
        let route = echoing("Authorization", headers: [("Cache-Control", "public, max-age=600")], log: log)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let bodies = try await HTTPFixture.run(routes: ["/news": route]) { http in
            let alice = source(http, [("Authorization", "Bearer alice")]).cache(in: records)
            let bob = source(http, [("Authorization", "Bearer bob")]).cache(in: records)
            return [
                text(try await alice.value(for: http.url("/news"))),
                text(try await bob.value(for: http.url("/news"))),
            ]
        }

        #expect(bodies == ["for Bearer alice", "for Bearer alice"])
        #expect(log.requests.count == 1)
    }

    @Test(arguments: ["s-maxage=600", "must-revalidate, max-age=600"])
    func aResponseToACredentialedRequestIsStoredWhenItsDirectivesAllow(_ cacheControl: String) async throws {
        let log = RequestLog()
        let route = echoing("Cookie", headers: [("Cache-Control", cacheControl)], log: log)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = source(http, [("Cookie", "session=1")]).cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            _ = try await provider.value(for: http.url("/a"))
        }

        #expect(log.requests.count == 1)
        #expect(records.count == 1)
    }

    @Test func aPrivateResponseIsStoredOnlyByAPrivateCache() async throws {
        let log = RequestLog()
        let route = echoing("Authorization", headers: [("Cache-Control", "private, max-age=600")], log: log)
        let shared = MemoryStorage<URL, HTTPCacheRecord>()
        let mine = MemoryStorage<URL, HTTPCacheRecord>()

        let bodies = try await HTTPFixture.run(routes: ["/me": route]) { http in
            let alice = source(http, [("Authorization", "Bearer alice")])
            var bodies: [String] = []
            for _ in 0..<2 {
                bodies.append(text(try await alice.cache(in: shared).value(for: http.url("/me"))))
            }
            for _ in 0..<2 {
                bodies.append(text(try await alice.cache(in: mine, policy: .private).value(for: http.url("/me"))))
            }
            return bodies
        }

        #expect(Set(bodies) == ["for Bearer alice"])
        #expect(log.requests.count == 3)
        #expect(shared.count == 0)
        #expect(mine.count == 1)
    }

    // Needs requests without Accept-Language: URLSession on Linux adds one to every request.
    #if AsyncHTTPClient
    @Test func varyKeepsOneVariantPerValueOfTheNamedHeader() async throws {
        let log = RequestLog()
        let route = echoing(
            "Accept-Language",
            headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
            log: log
        )
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let bodies = try await HTTPFixture.run(routes: ["/page": route]) { http in
            let english = source(http, [("Accept-Language", "en")]).cache(in: records)
            let french = source(http, [("Accept-Language", "fr")]).cache(in: records)
            let nobody = http.source().cache(in: records)
            var bodies: [String] = []
            for provider in [english, french, nobody, english, french, nobody] {
                bodies.append(text(try await provider.value(for: http.url("/page"))))
            }
            return bodies
        }

        #expect(bodies == ["for en", "for fr", "for nobody", "for en", "for fr", "for nobody"])
        #expect(log.requests.count == 3)
        // The list of variants and one record per variant.
        #expect(records.count == 4)
    }
    #endif

    @Test func varyingVariantsSurviveOnDiskAndANewProcessFindsThem() async throws {
        let log = RequestLog()
        let route = echoing(
            "Accept-Language",
            headers: [("ETag", "\"1\""), ("Vary", "accept-language, Accept-Language")],
            log: log
        )

        let bodies = try await withFolder { folder in
            try await HTTPFixture.run(routes: ["/page": route]) { http in
                let first = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
                _ = try await source(http, [("Accept-Language", "en")]).cache(in: first).value(for: http.url("/page"))
                let reopened = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
                return [
                    text(
                        try await source(http, [("Accept-Language", "en")]).cache(in: reopened).value(
                            for: http.url("/page")
                        )
                    ),
                    text(
                        try await source(http, [("Accept-Language", "de")]).cache(in: reopened).value(
                            for: http.url("/page")
                        )
                    ),
                ]
            }
        }

        #expect(bodies == ["for en", "for de"])
        // The stored English variant was revalidated; German had no variant to revalidate.
        #expect(log.values(of: "If-None-Match") == [nil, "\"1\"", nil])
    }

    @Test func varyStarIsNeverStored() async throws {
        let log = RequestLog()
        let route = echoing("Accept", headers: [("Cache-Control", "max-age=600"), ("Vary", "*")], log: log)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            _ = try await provider.value(for: http.url("/a"))
        }

        #expect(log.requests.count == 2)
        #expect(records.count == 0)
    }

    @Test func noStoreLeavesNothingOnDisk() async throws {
        let log = RequestLog()
        let route = echoing(
            "Accept",
            headers: [("Cache-Control", "no-store, max-age=600"), ("ETag", "\"1\"")],
            log: log
        )

        let (stored, files) = try await withFolder { folder in
            try await HTTPFixture.run(routes: ["/a": route]) { http in
                let records = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
                _ = try await http.source().cache(in: records, policy: .private).value(for: http.url("/a"))
                _ = try await http.source().cache(in: records, policy: .private).value(for: http.url("/a"))
                let files = FileManager.default.enumerator(atPath: folder.path)?
                    .compactMap { $0 as? String }
                    .filter { !$0.hasPrefix(DiskStorage.manifestName) && !$0.hasSuffix("/") }
                    .filter { path in
                        let attributes = try? FileManager.default.attributesOfItem(
                            atPath: folder.appendingPathComponent(path).path
                        )
                        return attributes?[.type] as? FileAttributeType == .typeRegular
                    }
                return (try DiskStorage(url: folder).count, files ?? [])
            }
        }

        #expect(log.requests.count == 2)
        #expect(stored == 0)
        #expect(files == [])
    }

    @Test func aRequestThatSaysNoStoreIsNeverStoredAndNoCacheAlwaysRevalidates() async throws {
        let log = RequestLog()
        let route = echoing("Accept", headers: [("Cache-Control", "max-age=600"), ("ETag", "\"1\"")], log: log)
        let unstored = MemoryStorage<URL, HTTPCacheRecord>()
        let revalidated = MemoryStorage<URL, HTTPCacheRecord>()

        try await HTTPFixture.run(routes: ["/a": route]) { http in
            let noStore = source(http, [("Cache-Control", "no-store")]).cache(in: unstored)
            _ = try await noStore.value(for: http.url("/a"))
            let noCache = source(http, [("Cache-Control", "no-cache")]).cache(in: revalidated)
            _ = try await noCache.value(for: http.url("/a"))
            _ = try await noCache.value(for: http.url("/a"))
        }

        #expect(unstored.count == 0)
        #expect(revalidated.count == 1)
        #expect(log.values(of: "If-None-Match") == [nil, nil, "\"1\""])
    }

    @Test func sMaxAgeReplacesMaxAgeInASharedCacheOnly() async throws {
        let log = RequestLog()
        let route = echoing(
            "Accept",
            headers: [("Cache-Control", "max-age=10, s-maxage=100"), ("ETag", "\"1\"")],
            log: log
        )
        let clock = ManualClock()

        let hits = try await HTTPFixture.run(routes: ["/a": route]) { http in
            let shared = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            let mine = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), policy: .private, clock: clock)
            _ = try await shared.value(for: http.url("/a"))
            _ = try await mine.value(for: http.url("/a"))
            clock.advance(by: .seconds(50))
            _ = try await shared.value(for: http.url("/a"))
            _ = try await mine.value(for: http.url("/a"))
            return log.requests.count
        }

        // Only the private cache's copy (max-age=10) had gone stale.
        #expect(hits == 3)
    }

    @Test func aFragmentIsNotPartOfTheKey() async throws {
        let log = RequestLog()
        let route = echoing("Accept", headers: [("Cache-Control", "max-age=600")], log: log)
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = http.source().cache(in: records)
            _ = try await provider.value(for: http.url("/a"))
            _ = try await provider.value(for: URL(string: http.url("/a").absoluteString + "#section")!)
        }

        #expect(log.requests.count == 1)
        #expect(records.count == 1)
    }
}

@Suite(.onTestThreads) struct HTTPCacheStalenessTests {
    @Test func aStaleResponseWithinStaleWhileRevalidateIsServedAtOnceAndRevalidatedInTheBackground() async throws {
        let resource = Resource(
            entityTag: "\"v1\"",
            headers: [("Cache-Control", "max-age=10, stale-while-revalidate=60")]
        )
        let clock = ManualClock()

        let (bodies, hits) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            var bodies: [String] = []
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            resource.change(body: "version 2", entityTag: "\"v2\"")
            clock.advance(by: .seconds(30))
            // Stale but within the window: the stored body, and one revalidation behind it.
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            await provider.waitForRevalidations()
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            // Past the window: the request waits for the server.
            resource.change(body: "version 3", entityTag: "\"v3\"")
            clock.advance(by: .seconds(100))
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            return (bodies, http.server.hits("/a"))
        }

        #expect(bodies == ["version 1", "version 1", "version 2", "version 3"])
        #expect(hits == 3)
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\"", "\"v2\""])
    }

    /// RFC 9111, section 4.2.4: `must-revalidate`, and in a shared cache `s-maxage` and
    /// `proxy-revalidate`, forbid serving the response stale, `stale-while-revalidate` or not.
    @Test(arguments: [
        ("max-age=10, stale-while-revalidate=60, must-revalidate", HTTPCachePolicy.private),
        ("s-maxage=10, stale-while-revalidate=60", HTTPCachePolicy.shared),
        ("max-age=10, stale-while-revalidate=60, proxy-revalidate", HTTPCachePolicy.shared),
    ])
    func aResponseThatForbidsStaleIsNotServedWhileRevalidating(
        cacheControl: String,
        policy: HTTPCachePolicy
    ) async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", cacheControl)])
        let clock = ManualClock()

        let bodies = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(
                in: MemoryStorage<URL, HTTPCacheRecord>(),
                policy: policy,
                clock: clock
            )
            var bodies: [String] = []
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            resource.change(body: "version 2", entityTag: "\"v2\"")
            clock.advance(by: .seconds(30))
            bodies.append(text(try await provider.value(for: http.url("/a"))))
            return bodies
        }

        #expect(bodies == ["version 1", "version 2"], "\(cacheControl)")
    }

    @Test func aStaleResponseWithinStaleIfErrorStandsInForAServerError() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10, stale-if-error=60")])
        let clock = ManualClock()
        let reports = LockedState<[Int?]>([])

        let (served, error) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock) { error in
                reports.withLock { $0.append(error.httpStatus) }
            }
            _ = try await provider.value(for: http.url("/a"))
            resource.setFailing(true)
            clock.advance(by: .seconds(40))
            let served = text(try await provider.value(for: http.url("/a")))
            clock.advance(by: .seconds(40))
            let error = await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/a")) }
            return (served, error)
        }

        #expect(served == "version 1")
        #expect(reports.withLock { $0 } == [500])
        #expect(error?.httpStatus == 500)
    }

    @Test func thePolicyAllowsStaleOnErrorUnlessTheResponseForbidsIt() async throws {
        let plain = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10")])
        let strict = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10, must-revalidate")])
        let clock = ManualClock()
        let policy = HTTPCachePolicy(staleIfError: .seconds(3600))

        let (served, error) = try await HTTPFixture.run(routes: ["/plain": plain.route, "/strict": strict.route]) {
            http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), policy: policy, clock: clock)
            _ = try await provider.value(for: http.url("/plain"))
            _ = try await provider.value(for: http.url("/strict"))
            plain.setFailing(true)
            strict.setFailing(true)
            clock.advance(by: .seconds(600))
            let served = text(try await provider.value(for: http.url("/plain")))
            let error = await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/strict")) }
            return (served, error)
        }

        #expect(served == "version 1")
        #expect(error?.httpStatus == 500)
    }

    // AsyncHTTPClient is the transport that retries a refused connection until the limit.
    #if AsyncHTTPClient
    @Test func aStaleResponseStandsInForAServerThatIsDown() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10, stale-if-error=600")])
        let clock = ManualClock()
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let server = try await LocalHTTPServer.start { await resource.route($0) }
        let url = server.url("/a")
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .testing)
        // The first response is the setup, with the fixture's 30 s safety net: in CI's run of
        // every suite on two cores it once took more than 5 s. The request to the server that is
        // down keeps 5 s, as AsyncHTTPClient retries a refused connection until the limit.
        let warming = HTTPSource(client: client, timeout: .seconds(30)).cache(in: records, clock: clock)
        let provider = HTTPSource(client: client, timeout: .seconds(5)).cache(in: records, clock: clock)
        do {
            _ = try await warming.value(for: url)
        } catch {
            // A client dropped without a shutdown traps in a debug build, taking every other
            // test in the process with it: this one fails alone.
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        await server.stop()
        clock.advance(by: .seconds(60))

        let served: Result<Data, StorageError>
        do {
            served = .success(try await provider.value(for: url))
        } catch {
            served = .failure(error)
        }
        try await client.shutdown()
        #expect(try served.map(text).get() == "version 1")
    }
    #endif

    @Test func aNotFoundIsNotAnOriginFailureAndIsNeverHiddenByAStaleResponse() async throws {
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=10, stale-if-error=600")])
        let gone = LockedState(false)
        let route: Route = { request in
            if gone.withLock({ $0 }) { return .status(404) }
            return await resource.route(request)
        }
        let clock = ManualClock()

        let error = try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = http.source().cache(in: MemoryStorage<URL, HTTPCacheRecord>(), clock: clock)
            _ = try await provider.value(for: http.url("/a"))
            gone.withLock { $0 = true }
            clock.advance(by: .seconds(60))
            return await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/a")) }
        }

        #expect(error?.httpStatus == 404)
    }
}

@Suite struct HTTPRetryTests {
    /// Answers `status` with `headers` to every request, counting them.
    private func attempts(status: Int, headers: [(String, String)] = []) async throws -> (Int, StorageError?) {
        try await HTTPFixture.run(routes: ["/a": { _ in .status(status, headers: headers) }]) { http in
            let provider = http.source().retrying(maximumAttemptCount: 3, backoff: Backoff(initial: .milliseconds(1)))
            let error = await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/a")) }
            return (http.server.hits("/a"), error)
        }
    }

    @Test(arguments: [500, 503, 408])
    func aTransientStatusIsRetried(status: Int) async throws {
        let (hits, error) = try await attempts(status: status)
        #expect(hits == 3)
        #expect(error?.httpStatus == status)
    }

    @Test(arguments: [400, 403, 404, 410])
    func aClientErrorIsNotRetried(status: Int) async throws {
        let (hits, error) = try await attempts(status: status)
        #expect(hits == 1)
        #expect(error?.httpStatus == status)
    }

    @Test func aRateLimitIsRetriedAfterTheWaitItAsksFor() async throws {
        let (hits, _) = try await attempts(status: 429, headers: [("Retry-After", "0")])
        #expect(hits == 3)
    }

    @Test func aRateLimitAskingForMoreThanTheLongestBackoffIsNotRetried() async throws {
        let (hits, error) = try await attempts(status: 429, headers: [("Retry-After", "3600")])
        #expect(hits == 1)
        #expect(error?.httpStatus == 429)
    }

    @Test func aBodyOverTheLimitIsNotRetriedAndNothingIsStored() async throws {
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let route: Route = { _ in .body(String(repeating: "x", count: 4096), [("Cache-Control", "max-age=600")]) }

        let (hits, error) = try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = http.source(maximumBodyByteCount: 1024).cache(in: records)
                .retrying(maximumAttemptCount: 3, backoff: Backoff(initial: .milliseconds(1)))
            let error = await #expect(throws: StorageError.self) { try await provider.value(for: http.url("/a")) }
            return (http.server.hits("/a"), error)
        }

        #expect(hits == 1)
        #expect(error?.code == .capacityExceeded)
        #expect(records.count == 0)
    }

    @Test func codesWithoutAdviceAreTransientOnlyForTimeOutsAndUnreachableSources() {
        let transient: [StorageError.Code] = [.timedOut, .sourceFailed]
        let lasting: [StorageError.Code] = [
            .capacityExceeded, .closed, .invalidKey, .decodingFailed, .encodingFailed, .corrupted, .notFound,
            .unsupported, .invalidConfiguration, .cancelled, .io,
        ]
        for code in transient {
            #expect(StorageError(code, storage: "S", message: "").isTransient, "\(code)")
        }
        for code in lasting {
            #expect(!StorageError(code, storage: "S", message: "").isTransient, "\(code)")
        }
    }
}

@Suite(.onTestThreads) struct HTTPCacheBadInputTests {
    /// Requests `/a` twice through a cache over a fresh store, the server answering with `headers`;
    /// returns the bodies, the server's hits and what was stored.
    private func twice(
        headers: [(String, String)],
        clock: ManualClock = ManualClock()
    ) async throws -> ([String], Int, Int) {
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let route: Route = { _ in .body("body", headers) }
        let (bodies, hits) = try await HTTPFixture.run(routes: ["/a": route]) { http in
            let provider = http.source().cache(in: records, clock: clock)
            let first = text(try await provider.value(for: http.url("/a")))
            clock.advance(by: .seconds(1))
            let second = text(try await provider.value(for: http.url("/a")))
            return ([first, second], http.server.hits("/a"))
        }
        return (bodies, hits, records.count)
    }

    @Test func aMalformedCacheControlIsReadAsStale() async throws {
        let (bodies, hits, stored) = try await twice(headers: [
            ("Cache-Control", "max-age=a lot, ==,"), ("ETag", "\"1\""),
        ])
        #expect(bodies == ["body", "body"])
        #expect(hits == 2)
        #expect(stored == 1)
    }

    @Test func aHugeMaxAgeIsClampedNotOverflowed() async throws {
        let (_, hits, stored) = try await twice(headers: [("Cache-Control", "max-age=999999999999999999999999999")])
        #expect(hits == 1)
        #expect(stored == 1)
    }

    @Test func aMalformedExpiresIsAlreadyExpired() async throws {
        let (_, hits, stored) = try await twice(headers: [("Expires", "next tuesday"), ("ETag", "\"1\"")])
        #expect(hits == 2)
        #expect(stored == 1)
    }

    @Test func aMalformedDateFallsBackToTheTimeOfReceipt() async throws {
        let expires = HTTPDateText.format(Date().addingTimeInterval(3600))
        let (_, hits, _) = try await twice(headers: [("Date", "not a date"), ("Expires", expires)])
        // Expires minus the time of receipt: about an hour, so still fresh a second later.
        #expect(hits == 1)
    }

    @Test func duplicateCacheControlLinesAreReadTogether() async throws {
        let (_, hits, stored) = try await twice(headers: [
            ("Cache-Control", "max-age=600"), ("Cache-Control", "no-store"),
        ])
        #expect(hits == 2)
        #expect(stored == 0)
    }

    @Test func aConnectionClosedMidBodyStoresNothing() async throws {
        let records = MemoryStorage<URL, HTTPCacheRecord>()
        let route: Route = { _ in
            .truncate(
                status: 200,
                headers: [("Cache-Control", "max-age=600")],
                body: Array("half".utf8),
                declaredLength: 100
            )
        }

        let error = try await HTTPFixture.run(routes: ["/a": route]) { http in
            await #expect(throws: StorageError.self) {
                try await http.source().cache(in: records).value(for: http.url("/a"))
            }
        }

        #expect(error?.code == .sourceFailed)
        #expect(records.count == 0)
    }

    @Test func aRedirectLoopStoresNothingAndIsNotServedStale() async throws {
        let routes: [String: Route] = [
            "/ping": { _ in .status(302, headers: [("Location", "/pong")]) },
            "/pong": { _ in .status(302, headers: [("Location", "/ping")]) },
        ]
        let records = MemoryStorage<URL, HTTPCacheRecord>()

        let error = try await HTTPFixture.run(routes: routes) { http in
            await #expect(throws: StorageError.self) {
                try await http.source().cache(in: records, policy: HTTPCachePolicy(staleIfError: .seconds(60)))
                    .value(for: http.url("/ping"))
            }
        }

        #expect((error?.underlying as? HTTPTransportError)?.kind == .redirects)
        #expect(records.count == 0)
    }
}
