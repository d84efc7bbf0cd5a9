public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Strata
import _StrataInternals

/// A small HTTP/1.1 server on 127.0.0.1 for tests and demos: every request goes to one handler,
/// which decides the reply, and the server counts the requests it receives per path.
///
/// ```swift
/// let server = try await LocalHTTPServer.start { request in
///     request.path == "/hello" ? .ok("hi") : .status(404)
/// }
/// defer { Task { await server.stop() } }
/// let url = server.url("/hello")
/// ```
///
/// The server binds an ephemeral port, so tests can run side by side. Keep-alive connections are
/// served until the client closes them or ``stop()`` is called. Any task may use it.
public final class LocalHTTPServer: Sendable {
    /// Decides the reply to a request. Called once per request, concurrently for requests on
    /// different connections; it may suspend (to hold a reply back until a test lets it go), and
    /// is cancelled when the server stops.
    public typealias Handler = @Sendable (Request) async -> Reply

    /// The port the server listens on.
    public let port: Int

    private let hits: HitCounter
    private let serving: Task<Void, Never>
    private let serverChannel: any Channel
    private let unserved: UnservedConnections

    private init(
        port: Int,
        hits: HitCounter,
        serving: Task<Void, Never>,
        serverChannel: any Channel,
        unserved: UnservedConnections
    ) {
        self.port = port
        self.hits = hits
        self.serving = serving
        self.serverChannel = serverChannel
        self.unserved = unserved
    }

    /// Starts a server on 127.0.0.1 at a port the system chooses, answering with `handler`.
    public static func start(_ handler: @escaping Handler) async throws -> LocalHTTPServer {
        let hits = HitCounter()
        let unserved = UnservedConnections()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    let connection = try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel
                    )
                    // Held until served: NIO's async accept can drop a connection it accepted
                    // (a known race of its server API, apple/swift-nio#2637), and a dropped one
                    // traps when it becomes active; `stop()` closes any left here.
                    unserved.add(connection)
                    return connection
                }
            }
        guard let port = channel.channel.localAddress?.port else {
            throw LocalHTTPServerError(message: "the server's socket has no port")
        }
        let serverChannel = channel.channel
        // Ends when `stop()` closes the listening socket: the accept loop serves every connection
        // accepted until then (a connection left unserved would be torn down by NIO with a
        // precondition failure), then cancels them all, and any handler still running.
        let serving = Task<Void, Never> {
            _ = try? await channel.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        unserved.remove(connection)
                        group.addTask {
                            await serve(connection, handler: handler, hits: hits)
                        }
                    }
                    group.cancelAll()
                }
            }
        }
        return LocalHTTPServer(
            port: port,
            hits: hits,
            serving: serving,
            serverChannel: serverChannel,
            unserved: unserved
        )
    }

    /// Returns the URL of `path` (which may carry a query) on this server.
    public func url(_ path: String) -> URL {
        let separator = path.hasPrefix("/") ? "" : "/"
        // A literal host and a port from the socket: the string is always a valid URL.
        return URL(string: "http://127.0.0.1:\(port)\(separator)\(path)")
            ?? URL(fileURLWithPath: "/")
    }

    /// The number of requests received for `path` (without the query) so far.
    public func hits(_ path: String) -> Int {
        hits.count(path)
    }

    /// The number of requests received for every path so far.
    public var totalHits: Int {
        hits.total
    }

    /// Returns `true` once at least `count` requests for `path` have been received, or `false`
    /// when `limit` passes first.
    ///
    /// A request that fails before it reaches the server (its connection never came up) never
    /// arrives: a test learns that here and reports it, instead of waiting for ever.
    public func waitForHits(_ count: Int, path: String, within limit: Duration = .seconds(30)) async -> Bool {
        await hits.wait(for: count, path: path, within: limit)
    }

    /// Stops accepting connections, closes the open ones, cancels running handlers and returns
    /// when all of that is done.
    public func stop() async {
        // Not `serving.cancel()`: a cancelled accept loop would drop connections accepted but not
        // yet handed to it. Closing the socket ends the loop once it has taken every one.
        try? await serverChannel.close()
        await serving.value
        for connection in unserved.removeAll() {
            try? await connection.executeThenClose { _, _ in }
        }
    }
}

extension LocalHTTPServer {
    /// A request as the handler sees it.
    public struct Request: Sendable {
        /// The method, such as `GET`.
        public var method: String
        /// The path, without the query.
        public var path: String
        /// The query, without the `?`; empty when there is none.
        public var query: String
        /// The headers in the order they arrived.
        public var headers: [(name: String, value: String)]

        /// Returns the first value of the header `name`, compared without regard to case.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// Returns the value of the query item `name`, if present.
        public func queryItem(_ name: String) -> String? {
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.first.map(String.init) == name {
                    return parts.count > 1 ? String(parts[1]) : ""
                }
            }
            return nil
        }
    }

    /// What the server does with a request.
    public enum Reply: Sendable {
        /// Answers with a status, headers and a body; `Content-Length` is added.
        case respond(status: Int, headers: [(String, String)], body: [UInt8])
        /// Answers with a status and headers, then `chunkCount` copies of `chunk`, each after `pause`,
        /// declaring the total length in `Content-Length` when `declaresLength` is set and sending the
        /// body chunked otherwise.
        case stream(
            status: Int,
            headers: [(String, String)],
            chunk: [UInt8],
            chunkCount: Int,
            declaresLength: Bool,
            pause: Duration = .zero
        )
        /// Closes the connection at once with a TCP reset, without answering.
        case resetConnection
        /// Sends the head with a `Content-Length` of `declaredLength`, then `body` (shorter), then
        /// closes the connection.
        case truncate(status: Int, headers: [(String, String)], body: [UInt8], declaredLength: Int)

        /// Answers 200 with `body` as UTF-8 text and extra `headers`.
        public static func ok(_ body: String, headers: [(String, String)] = []) -> Reply {
            .respond(status: 200, headers: headers, body: Array(body.utf8))
        }

        /// Answers `code` with an empty body and extra `headers`.
        public static func status(_ code: Int, headers: [(String, String)] = []) -> Reply {
            .respond(status: code, headers: headers, body: [])
        }
    }
}

/// A failure to start the server.
public struct LocalHTTPServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public var message: String

    public var description: String { message }
}

/// Serves the requests of one connection in turn until the client closes it, the handler resets
/// it, or the server stops.
private func serve(
    _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
    handler: LocalHTTPServer.Handler,
    hits: HitCounter
) async {
    let channel = connection.channel
    try? await connection.executeThenClose { inbound, outbound in
        var head: HTTPRequestHead?
        for try await part in inbound {
            switch part {
            case .head(let received):
                head = received
            case .body:
                break
            case .end:
                guard let received = head else { continue }
                head = nil
                let request = LocalHTTPServer.Request(received)
                hits.record(request.path)
                let reply = await handler(request)
                if try await !write(reply, to: outbound, channel: channel, keepAlive: received.isKeepAlive) {
                    return
                }
            }
        }
    }
}

/// Writes `reply`; returns whether the connection stays open for more requests.
private func write(
    _ reply: LocalHTTPServer.Reply,
    to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>,
    channel: any Channel,
    keepAlive: Bool
) async throws -> Bool {
    switch reply {
    case .respond(let status, let headers, let body):
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
        try await outbound.write(
            .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: fields))
        )
        if !body.isEmpty {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
        }
        try await outbound.write(.end(nil))
        return keepAlive
    case .stream(let status, let headers, let chunk, let chunkCount, let declaresLength, let pause):
        var fields = HTTPHeaders(headers)
        if declaresLength {
            fields.replaceOrAdd(name: "Content-Length", value: "\(chunk.count * chunkCount)")
        } else {
            fields.replaceOrAdd(name: "Transfer-Encoding", value: "chunked")
        }
        try await outbound.write(
            .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: fields))
        )
        let buffer = ByteBuffer(bytes: chunk)
        for _ in 0..<chunkCount {
            if pause > .zero {
                try await Task.sleep(for: pause)
            }
            try Task.checkCancellation()
            try await outbound.write(.body(.byteBuffer(buffer)))
        }
        try await outbound.write(.end(nil))
        return keepAlive
    case .resetConnection:
        // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        if let options = channel as? any SocketOptionProvider {
            try? await options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        return false
    case .truncate(let status, let headers, let body, let declaredLength):
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: "\(declaredLength)")
        try await outbound.write(
            .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: fields))
        )
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
        return false
    }
}

extension LocalHTTPServer.Request {
    fileprivate init(_ head: HTTPRequestHead) {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.init(
            method: head.method.rawValue,
            path: parts.first.map(String.init) ?? head.uri,
            query: parts.count > 1 ? String(parts[1]) : "",
            headers: head.headers.map { (name: $0.name, value: $0.value) }
        )
    }
}

/// Connections accepted and not yet handed to the accept loop. Any task may use it.
private final class UnservedConnections: Sendable {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    private let connections = LockedState([ObjectIdentifier: Connection]())

    func add(_ connection: Connection) {
        connections.withLock { $0[ObjectIdentifier(connection.channel)] = connection }
    }

    func remove(_ connection: Connection) {
        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(connection.channel)) }
    }

    func removeAll() -> [Connection] {
        connections.withLock { connections in
            defer { connections = [:] }
            return Array(connections.values)
        }
    }
}

/// Requests received per path, and tasks waiting for a number of them. Any task may use it.
private final class HitCounter: Sendable {
    private struct Waiter {
        var id: Int
        var path: String
        var count: Int
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var counts: [String: Int] = [:]
        var waiters: [Waiter] = []
        var lastID = 0
        /// Waits whose limit passed before they were registered.
        var expired: Set<Int> = []
    }

    private let state = LockedState(State())

    func record(_ path: String) {
        let ready = state.withLock { state in
            state.counts[path, default: 0] += 1
            let now = state.counts[path, default: 0]
            let ready = state.waiters.filter { $0.path == path && $0.count <= now }.map(\.continuation)
            state.waiters.removeAll { $0.path == path && $0.count <= now }
            return ready
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    func count(_ path: String) -> Int {
        state.withLock { $0.counts[path, default: 0] }
    }

    var total: Int {
        state.withLock { $0.counts.values.reduce(0, +) }
    }

    func wait(for count: Int, path: String, within limit: Duration) async -> Bool {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        let timer = Task { [state] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.expired.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = state.withLock { state -> Bool? in
                if state.counts[path, default: 0] >= count { return true }
                if state.expired.remove(id) != nil { return false }
                state.waiters.append(Waiter(id: id, path: path, count: count, continuation: continuation))
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }
}
