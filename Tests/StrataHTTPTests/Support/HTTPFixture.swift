import AsyncHTTPClient
import Foundation
import LocalHTTPServer
import NIOCore
import NIOPosix
import Strata
import StrataAsyncHTTPClient
import StrataHTTP
import _StrataInternals

typealias Request = LocalHTTPServer.Request
typealias Reply = LocalHTTPServer.Reply

/// A route of the test server: answers one path.
typealias Route = @Sendable (Request) async -> Reply

/// A local server with the given routes and an HTTP client of the test's own, both stopped when
/// the test's body returns or throws.
struct HTTPFixture {
    let server: LocalHTTPServer
    let client: HTTPClient
    /// The transport the fixture's sources send through: on ``client``, or on URLSession.
    let transport: any HTTPTransport

    /// Runs `body` against a server answering `routes` (404 for any other path), with a client
    /// that follows up to 5 redirects unless `configuration` says otherwise, and sources on
    /// `transport`.
    ///
    /// The client runs on NIO's shared event loops, which every other test's server and client
    /// share, unless `ownEventLoop` gives it a thread of its own: the form for a test that times
    /// what the client reports at a limit, which the shared loops' queue could make late.
    static func run<Result>(
        routes: [String: Route],
        configuration: HTTPClient.Configuration = .testing,
        transport kind: TransportKind = .default,
        ownEventLoop: Bool = false,
        _ body: (HTTPFixture) async throws -> Result
    ) async throws -> Result {
        let server = try await LocalHTTPServer.start { request in
            guard let route = routes[request.path] else { return .status(404) }
            return await route(request)
        }
        let group = ownEventLoop ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let client = HTTPClient(
            eventLoopGroup: group ?? MultiThreadedEventLoopGroup.singleton,
            configuration: configuration
        )
        let transport: any HTTPTransport =
            switch kind {
            #if AsyncHTTPClient
            case .asyncHTTPClient: AsyncHTTPClientTransport(client: client)
            #endif
            case .urlSession: URLSessionTransport()
            }
        let fixture = HTTPFixture(server: server, client: client, transport: transport)
        let result: Result
        do {
            result = try await body(fixture)
        } catch {
            try? await client.shutdown()
            try? await group?.shutdownGracefully()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        try await group?.shutdownGracefully()
        await server.stop()
        return result
    }

    /// The URL of `path` on the server.
    func url(_ path: String) -> URL {
        server.url(path)
    }

    /// A source on the fixture's client.
    ///
    /// The default time limit is only a safety net for tests whose subject is not a timeout
    /// (those pass a short one of their own): in a bare run of every suite, both cores are busy,
    /// and a 1 MiB body or a 503 once took past 5 s to come back through the local server.
    func source(timeout: Duration = .seconds(30), maximumBodyByteCount: Int = 1024 * 1024) -> HTTPSource {
        HTTPSource(transport: transport, timeout: timeout, maximumBodyByteCount: maximumBodyByteCount)
    }
}

/// The transports that come with the package, each run through the same tests: URLSession's
/// always, AsyncHTTPClient's with its trait.
enum TransportKind: String, CaseIterable, Sendable, CustomStringConvertible {
    #if AsyncHTTPClient
    case asyncHTTPClient
    #endif
    case urlSession

    /// The server's transport where it is built, else URLSession's.
    static var `default`: TransportKind {
        #if AsyncHTTPClient
        .asyncHTTPClient
        #else
        .urlSession
        #endif
    }

    var description: String { rawValue }
}

extension HTTPClient.Configuration {
    /// Follows up to 5 redirects, connects within 2 s.
    static var testing: HTTPClient.Configuration {
        HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 5, allowCycles: false),
            timeout: .init(connect: .seconds(2))
        )
    }
}

/// Holds requests until the test opens it. Any task may use it.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedState(State())

    /// Returns once the gate is open.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    /// Lets every waiting and later request through.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Records what a route saw: the conditional headers of each request. Any task may use it.
final class RequestLog: Sendable {
    private let entries = LockedState<[Request]>([])

    func record(_ request: Request) {
        entries.withLock { $0.append(request) }
    }

    var requests: [Request] {
        entries.withLock { $0 }
    }

    /// The value of `header` in each request, `nil` where it was absent.
    func values(of header: String) -> [String?] {
        requests.map { $0.header(header) }
    }
}

/// Yields until `condition` holds, at most `attempts` times; returns whether it held.
func eventually(attempts: Int = 100_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<attempts {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

extension Reply {
    /// 200 with `body` and `headers`.
    static func body(_ body: String, _ headers: [(String, String)] = []) -> Reply {
        .respond(status: 200, headers: headers, body: Array(body.utf8))
    }
}

extension StorageError {
    /// The status of the `HTTPStatusError` underneath, if there is one.
    var httpStatus: Int? {
        (underlying as? HTTPStatusError)?.status
    }
}
