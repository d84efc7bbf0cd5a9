// An example server: `/products/{id}` through memory over PostgreSQL (a SharedCache, kept fresh
// across processes) over a slow upstream, with one upstream call per product however many ask.
// scripts/load.sh drives it with wrk; see the README's section on servers.
//
//   ProductServer serve --port 8080 --mode cached --postgres URL --table products
//   ProductServer serve --port 8080 --mode uncached [--threads 1]
//   ProductServer writer --postgres URL --table products --servers 8081,8082 --changes 200
#if Hummingbird
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Strata
import StrataPostgres

/// A product as the upstream describes it; `version` grows with each change.
struct Product: Codable, Sendable {
    var id: Int
    var name: String
    var price: Int
    var version: Int
}

/// A source that takes 50 ms per call, counting its calls.
final class Upstream: Sendable {
    private let count = NIOLockedValueBox(0)

    var calls: Int { count.withLockedValue { $0 } }

    func product(_ id: String) async throws -> Data {
        count.withLockedValue { $0 += 1 }
        try await Task.sleep(for: .milliseconds(50))
        guard let number = Int(id) else { throw HTTPError(.notFound) }
        return try JSONEncoder().encode(Product(id: number, name: "Product \(number)", price: 100 + number, version: 0))
    }
}

/// What the server has answered: requests, distinct products asked for, and upstream calls.
final class Statistics: Sendable {
    private let state = NIOLockedValueBox((requests: 0, ids: Set<String>()))

    func record(_ id: String) {
        state.withLockedValue { state in
            state.requests += 1
            state.ids.insert(id)
        }
    }

    func json(upstreamCalls: Int) -> String {
        let (requests, distinct) = state.withLockedValue { ($0.requests, $0.ids.count) }
        return #"{"requests":\#(requests),"distinctIDs":\#(distinct),"upstreamCalls":\#(upstreamCalls)}"#
    }
}

/// `--name value` options after the command.
struct Arguments {
    var command: String
    var values: [String: String] = [:]

    init(_ arguments: [String]) throws {
        guard arguments.count >= 2 else { throw HTTPError(.badRequest, message: "usage: ProductServer serve|writer …") }
        command = arguments[1]
        var index = 2
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            values[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
    }

    func value(_ name: String, default fallback: String? = nil) throws -> String {
        guard let value = values[name] ?? fallback else {
            throw ArgumentMissing(description: "--\(name) is required for \(command)")
        }
        return value
    }
}

struct ArgumentMissing: Error, CustomStringConvertible {
    var description: String
}

@main
struct ProductServer {
    static func main() async throws {
        let arguments = try Arguments(CommandLine.arguments)
        switch arguments.command {
        case "serve": try await serve(arguments)
        case "writer": try await write(arguments)
        default: throw ArgumentMissing(description: "unknown command \(arguments.command): use serve or writer")
        }
    }

    static func serve(_ arguments: Arguments) async throws {
        let port = Int(try arguments.value("port", default: "8080")) ?? 8080
        let cached = try arguments.value("mode", default: "cached") == "cached"
        var logger = Logger(label: "product-server")
        logger.logLevel = .warning
        let upstream = Upstream()
        let statistics = Statistics()
        let router = Router()
        router.get("/stats") { _, _ in statistics.json(upstreamCalls: upstream.calls) }

        var closing: (@Sendable () async -> Void)?
        if cached {
            var options = PostgresStorage.Options(table: try arguments.value("table", default: "products"))
            options.maximumConnectionCount = 8
            let storage = try await PostgresStorage(url: try arguments.value("postgres"), options: options)
            let memory = try MemoryStorage<String, Data>(maximumCount: 100_000)
            let shared = try await storage.sharedCache(in: memory)
            // One upstream call per product however many requests ask at once; the answer is
            // kept in PostgreSQL for every server and in this server's memory.
            let products = Provider { (id: String) in try await upstream.product(id) }
                .cache(shared)
                .coordinated()
            router.get("/products/:id") { _, context -> Response in
                let id = try context.parameters.require("id")
                statistics.record(id)
                return json(try await products.value(for: id))
            }
            closing = {
                await shared.close()
                await storage.close()
            }
        } else {
            router.get("/products/:id") { _, context -> Response in
                let id = try context.parameters.require("id")
                statistics.record(id)
                return json(try await upstream.product(id))
            }
        }
        // Several servers on one machine share its cores: `--threads 1` gives each one event loop.
        let threads = Int(try arguments.value("threads", default: "\(System.coreCount)")) ?? System.coreCount
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: threads)),
            logger: logger
        )
        try await app.runService()
        await closing?()
    }

    static func json(_ data: Data) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    /// Changes products in PostgreSQL one at a time and measures, for each change and each
    /// server, the time from the commit to the server's first answer with the new version.
    static func write(_ arguments: Arguments) async throws {
        let servers = try arguments.value("servers").split(separator: ",").compactMap { Int($0) }
        let changes = Int(try arguments.value("changes", default: "200")) ?? 200
        let interval = Int(try arguments.value("interval-ms", default: "100")) ?? 100
        let ids = Int(try arguments.value("ids", default: "1000")) ?? 1000
        let options = PostgresStorage.Options(table: try arguments.value("table", default: "products"))
        let storage = try await PostgresStorage(url: try arguments.value("postgres"), options: options)
        // Each server's connection is open before the first change: the delays are the
        // servers', not the client's connection setup.
        for port in servers {
            _ = await firstAnswer(containing: "", port: port, id: 1, since: .now)
        }
        var delays: [Duration] = []
        var slowest: (answer: Answer, change: Int)?
        var missed = 0
        for change in 1...changes {
            let id = Int.random(in: 1...ids)
            let version = 1_000 + change
            let product = Product(id: id, name: "Product \(id)", price: 100 + id + change, version: version)
            try await storage.set(try JSONEncoder().encode(product), forKey: String(id))
            let committed = ContinuousClock.now
            let marker = #""version":\#(version)"#
            let seen = await withTaskGroup(of: Answer?.self) { group in
                for port in servers {
                    group.addTask { await firstAnswer(containing: marker, port: port, id: id, since: committed) }
                }
                return await group.reduce(into: [Answer?]()) { $0.append($1) }
            }
            for answer in seen {
                guard let answer else {
                    missed += 1
                    continue
                }
                delays.append(answer.delay)
                if answer.delay > slowest?.answer.delay ?? .zero { slowest = (answer, change) }
            }
            try await Task.sleep(for: .milliseconds(interval))
        }
        await storage.close()
        delays.sort()
        func percentile(_ p: Double) -> String {
            guard !delays.isEmpty else { return "-" }
            let index = max(0, min(delays.count - 1, Int((Double(delays.count) * p).rounded(.up)) - 1))
            let (seconds, attoseconds) = delays[index].components
            return String(format: "%.1f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
        let worst = slowest.map {
            " (change \($0.change) of \(changes): \($0.answer.requests) requests, the longest \($0.answer.longestRequest))"
        }
        print(
            "staleness: \(delays.count) answers, p50 \(percentile(0.5)), p99 \(percentile(0.99)), "
                + "max \(percentile(1.0))\(worst ?? ""), not seen within 2 s: \(missed)"
        )
    }

    /// How a server came to answer with a change: after how long, in how many requests, and
    /// the longest of them.
    struct Answer: Sendable {
        var delay: Duration
        var requests: Int
        var longestRequest: Duration
    }

    /// Asks the server on `port` for product `id` until it answers with `marker`, for up to
    /// 2 seconds; `nil` if it never does.
    static func firstAnswer(
        containing marker: String,
        port: Int,
        id: Int,
        since start: ContinuousClock.Instant
    ) async -> Answer? {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/products/\(id)")
        var answer = Answer(delay: .zero, requests: 0, longestRequest: .zero)
        while ContinuousClock.now - start < .seconds(2) {
            let sent = ContinuousClock.now
            answer.requests += 1
            let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2))
            let body = try? await response?.body.collect(upTo: 1 << 20)
            answer.longestRequest = max(answer.longestRequest, ContinuousClock.now - sent)
            if let body, String(buffer: body).contains(marker) {
                answer.delay = ContinuousClock.now - start
                return answer
            }
        }
        return nil
    }
}
#else
@main
struct ProductServer {
    static func main() {
        print("ProductServer needs the Hummingbird trait (on by default)")
    }
}
#endif
