import Foundation
import HTTPTypes
import LocalHTTPServer
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

/// The same behaviour from both transports that come with the package, against the local
/// server: what a source returns and throws must not depend on the client underneath.
@Suite struct HTTPTransportTests {
    @Test(arguments: TransportKind.allCases)
    func aSuccessfulResponseIsTheBody(transport: TransportKind) async throws {
        let body = try await HTTPFixture.run(routes: ["/a": { _ in .body("alpha") }], transport: transport) { http in
            try await http.source().value(for: http.url("/a"))
        }
        #expect(body == Data("alpha".utf8))
    }

    @Test(arguments: TransportKind.allCases)
    func aStatusOutsideTwoHundredsIsSourceFailedWithItsFields(transport: TransportKind) async throws {
        let routes: [String: Route] = ["/a": { _ in .status(503, headers: [("Retry-After", "3")]) }]
        let error = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            await #expect(throws: StorageError.self) { try await http.source().value(for: http.url("/a")) }
        }
        #expect(error?.code == .sourceFailed)
        #expect(error?.httpStatus == 503)
        #expect((error?.underlying as? HTTPStatusError)?.headers[.retryAfter] == "3")
        #expect(error?.isTransient == true)
    }

    @Test(arguments: TransportKind.allCases)
    func aRefusedConnectionIsSourceFailedAndTransient(transport: TransportKind) async throws {
        let error = try await HTTPFixture.run(routes: [:], transport: transport) { http in
            await #expect(throws: StorageError.self) {
                // A refusal comes back at once; the time limit is only a bound, wide enough that a
                // run of every suite on two cores (where URLSession's thread waited past 3 s
                // once) cannot turn the refusal into a timeout.
                try await http.source(timeout: .seconds(20)).value(for: HTTPSourceTests.nothingListens)
            }
        }
        #expect(error?.code == .sourceFailed)
        #expect((error?.underlying as? HTTPTransportError)?.kind == .connectionFailed)
        #expect(error?.isTransient == true)
    }

    @Test(arguments: TransportKind.allCases)
    func aResetOrACutShortBodyIsSourceFailedAndNothingIsCached(transport: TransportKind) async throws {
        let routes: [String: Route] = [
            "/reset": { _ in .resetConnection },
            "/cut": { _ in .truncate(status: 200, headers: [], body: Array("half".utf8), declaredLength: 100) },
        ]
        let cache = MemoryStorage<URL, Data>()
        let errors = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            var errors: [StorageError?] = []
            for path in ["/reset", "/cut"] {
                errors.append(
                    await #expect(throws: StorageError.self) {
                        try await http.source().cache(cache).value(for: http.url(path))
                    }
                )
            }
            return errors
        }
        #expect(errors.map { $0?.code } == [.sourceFailed, .sourceFailed])
        #expect(cache.count == 0)
    }

    @Test(arguments: TransportKind.allCases, [true, false])
    func aBodyOverTheLimitIsCapacityExceeded(transport: TransportKind, declaresLength: Bool) async throws {
        let routes: [String: Route] = [
            "/huge": { _ in
                .stream(
                    status: 200,
                    headers: [],
                    chunk: Array(repeating: 0x2A, count: 64 * 1024),
                    chunkCount: 64,
                    declaresLength: declaresLength
                )
            },
            "/exact": { _ in
                .stream(status: 200, headers: [], chunk: [1, 2, 3, 4], chunkCount: 4, declaresLength: declaresLength)
            },
        ]
        let (error, exact) = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let error = await #expect(throws: StorageError.self) {
                try await http.source(maximumBodyByteCount: 1024 * 1024).value(for: http.url("/huge"))
            }
            let exact = try await http.source(maximumBodyByteCount: 16).value(for: http.url("/exact"))
            return (error, exact)
        }
        #expect(error?.code == .capacityExceeded)
        #expect(
            (error?.underlying as? HTTPBodyTooLargeError)?.declaredByteCount == (declaresLength ? 4 * 1024 * 1024 : nil)
        )
        #expect(exact.count == 16)
    }

    @Test(arguments: TransportKind.allCases)
    func aServerSlowToAnswerIsTimedOut(transport: TransportKind) async throws {
        let routes: [String: Route] = [
            "/slow": { _ in
                try? await Task.sleep(for: .seconds(30))
                return .body("late")
            }
        ]
        let (error, elapsed) = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let source = http.source(timeout: .milliseconds(300))
            return await TestThreads.timed {
                await #expect(throws: StorageError.self) { try await source.value(for: http.url("/slow")) }
            }
        }
        #expect(error?.code == .timedOut)
        #expect(elapsed < .milliseconds(300) + .seconds(1), "the limit reported after \(elapsed)")
    }

    @Test(arguments: TransportKind.allCases)
    func redirectsAreFollowedAndALoopIsNotRetried(transport: TransportKind) async throws {
        let routes: [String: Route] = [
            "/old": { _ in .status(301, headers: [("Location", "/new")]) },
            "/new": { _ in .body("moved here") },
            "/ping": { _ in .status(302, headers: [("Location", "/pong")]) },
            "/pong": { _ in .status(302, headers: [("Location", "/ping")]) },
        ]
        let (body, loop) = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let body = try await http.source().value(for: http.url("/old"))
            let loop = await #expect(throws: StorageError.self) {
                try await http.source().value(for: http.url("/ping"))
            }
            return (body, loop)
        }
        #expect(body == Data("moved here".utf8))
        #expect(loop?.code == .sourceFailed)
        #expect(loop?.isTransient == false)
    }

    @Test(arguments: TransportKind.allCases)
    func theSourcesFieldsAndTheCachesConditionsReachTheServer(transport: TransportKind) async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let (bodies, hits) = try await HTTPFixture.run(routes: ["/a": resource.route], transport: transport) { http in
            var source = http.source()
            source.headers[.authorization] = "Bearer token"
            let cache = source.cache(in: MemoryStorage<URL, HTTPCacheRecord>(), policy: .private)
            let bodies = [try await cache.value(for: http.url("/a")), try await cache.value(for: http.url("/a"))]
            return (bodies, http.server.hits("/a"))
        }
        #expect(Set(bodies) == [Data("version 1".utf8)])
        #expect(hits == 2)
        #expect(resource.log.values(of: "Authorization") == ["Bearer token", "Bearer token"])
        #expect(resource.log.values(of: "If-None-Match") == [nil, "\"v1\""])
    }

    @Test(arguments: TransportKind.allCases)
    func aCancelledRequestIsCancelled(transport: TransportKind) async throws {
        let gate = Gate()
        let routes: [String: Route] = [
            "/held": { _ in
                await gate.wait()
                return .body("late")
            }
        ]
        let error = try await HTTPFixture.run(routes: routes, transport: transport) { http in
            let source = http.source()
            let url = http.url("/held")
            let task = Task { try await source.value(for: url) }
            let arrived = await http.server.waitForHits(1, path: "/held")
            task.cancel()
            let result = await task.result
            gate.open()
            #expect(arrived, "the request never reached the server: \(result)")
            if case .failure(let error) = result { return error as? StorageError }
            return nil
        }
        #expect(error?.code == .cancelled)
    }

    /// The tests that hold a request at the server wait for it to arrive; one that never arrives
    /// (its connection never came up) ends the wait at its limit, so the test reports it instead
    /// of holding the whole run until an outer limit stops it.
    @Test func aWaitForARequestThatNeverArrivesEndsAtItsLimit() async throws {
        let (missing, arrived) = try await HTTPFixture.run(routes: ["/a": { _ in .body("alpha") }]) { http in
            let missing = await http.server.waitForHits(1, path: "/a", within: .milliseconds(200))
            _ = try await http.source().value(for: http.url("/a"))
            let arrived = await http.server.waitForHits(1, path: "/a", within: .milliseconds(200))
            return (missing, arrived)
        }
        #expect(!missing)
        #expect(arrived)
    }
}
