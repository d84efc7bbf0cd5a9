// An example server: `/products/{id}` through memory over PostgreSQL (a SharedCache, kept fresh
// across processes) over a slow upstream, with one upstream call per product however many ask.
// scripts/load.sh drives it with wrk; see the article "Getting started on a server".
//
//   ProductServer serve --port 8080 --mode cached --postgres URL --table products
//   ProductServer serve --port 8080 --mode uncached [--threads 1]
//   ProductServer writer --postgres URL --table products --servers 8081,8082 --changes 200
#if Hummingbird && Postgres && AsyncHTTPClient
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Strata
import StrataPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
            let memory = MemoryStorage<String, Data>(maximumCount: 100_000)
            let shared = try await storage.sharedCache(in: memory)
            // One upstream call per product however many requests ask at once; the answer is
            // kept in PostgreSQL for every server and in this server's memory.
            let products = AnyProvider { (id: String) in try await upstream.product(id) }
                .cache(shared)
                .coordinated()
            router.get("/products/:id") { _, context -> Response in
                let id = try context.parameters.require("id")
                statistics.record(id)
                let product = try await products.value(for: id)
                return json(product, servedAt: Monotonic.now)
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

    static func json(_ data: Data, servedAt: UInt64? = nil) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let servedAt { headers[.servedAt] = String(servedAt) }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Changes products in PostgreSQL one at a time and measures, for each change and each
    /// server, how long after the commit the server went on serving the old version.
    ///
    /// Four pollers per server ask for the changed product, each as soon as its last answer
    /// came, until each has seen the new version. Every answer carries the time the server read
    /// the product (`Served-At`, on the machine's monotonic clock, which every process here
    /// shares). A change's staleness on a server is the latest read of the old version after
    /// the commit, or zero. Also printed: the time until the first answer with the new version
    /// arrived, which adds the request's own latency under load to the staleness.
    static func write(_ arguments: Arguments) async throws {
        if arguments.values["freeze-pid"] != nil {
            try await writeThroughAFault(arguments)
            return
        }
        let servers = try arguments.value("servers").split(separator: ",").compactMap { Int($0) }
        let changes = Int(try arguments.value("changes", default: "200")) ?? 200
        let interval = Int(try arguments.value("interval-ms", default: "100")) ?? 100
        let ids = Int(try arguments.value("ids", default: "1000")) ?? 1000
        let options = PostgresStorage.Options(table: try arguments.value("table", default: "products"))
        let storage = try await PostgresStorage(url: try arguments.value("postgres"), options: options)
        // Each server's connections are open before the first change: the delays are the
        // servers', not the client's connection setup.
        for port in servers {
            _ = await watch(port: port, id: 1, version: nil, committed: Monotonic.now)
        }
        var staleness: [UInt64] = []
        var firstNew: [UInt64] = []
        var slowest: (watch: Watch, change: Int, port: Int)?
        var missed = 0
        for change in 1...changes {
            let id = Int.random(in: 1...ids)
            let version = 1_000 + change
            let product = Product(id: id, name: "Product \(id)", price: 100 + id + change, version: version)
            try await storage.set(try JSONEncoder().encode(product), forKey: String(id))
            let committed = Monotonic.now
            let watches = await withTaskGroup(of: (Int, Watch).self) { group in
                for port in servers {
                    group.addTask { (port, await watch(port: port, id: id, version: version, committed: committed)) }
                }
                return await group.reduce(into: [(Int, Watch)]()) { $0.append($1) }
            }
            for (port, watch) in watches {
                guard let received = watch.firstNewReceived else {
                    missed += 1
                    continue
                }
                staleness.append(watch.staleness)
                firstNew.append(received)
                if watch.staleness > slowest?.watch.staleness ?? 0 { slowest = (watch, change, port) }
            }
            try await Task.sleep(for: .milliseconds(interval))
        }
        await storage.close()
        let worst = slowest.map {
            " (change \($0.change), port \($0.port): the last old answer was read "
                + "\(milliseconds($0.watch.staleness)) after the commit, \($0.watch.answers) answers)"
        }
        print(
            "staleness (last old version served after the commit): \(staleness.count) changes × servers, "
                + "\(percentiles(staleness))\(worst ?? ""); "
                + "first new answer received: \(percentiles(firstNew)); not seen within 2 s: \(missed)"
        )
    }

    /// `write` with a fault: after `--freeze-after-ms`, stops the process `--freeze-pid` (the TCP
    /// relay that carries one server's PostgreSQL connections, scripts/tcp-relay.py) for
    /// `--freeze-ms`, so that its connections go silent without closing, then lets it go on.
    /// Changes keep coming every `--interval-ms` meanwhile: each one's servers are watched, for
    /// `--watch-ms`, without waiting for the watch to end. Prints, for each server, the staleness
    /// of the changes committed before, during and after the fault.
    static func writeThroughAFault(_ arguments: Arguments) async throws {
        let servers = try arguments.value("servers").split(separator: ",").compactMap { Int($0) }
        let changes = Int(try arguments.value("changes", default: "200")) ?? 200
        let interval = Int(try arguments.value("interval-ms", default: "100")) ?? 100
        let ids = Int(try arguments.value("ids", default: "1000")) ?? 1000
        guard let pid = Int32(try arguments.value("freeze-pid")) else {
            throw ArgumentMissing(description: "--freeze-pid must be a process ID")
        }
        let freezeAfter = Int(try arguments.value("freeze-after-ms", default: "5000")) ?? 5000
        let freezeFor = Int(try arguments.value("freeze-ms", default: "6000")) ?? 6000
        let window = UInt64(Int(try arguments.value("watch-ms", default: "12000")) ?? 12_000) * 1_000_000
        let options = PostgresStorage.Options(table: try arguments.value("table", default: "products"))
        let storage = try await PostgresStorage(url: try arguments.value("postgres"), options: options)
        for port in servers {
            _ = await watch(port: port, id: 1, version: nil, committed: Monotonic.now)
        }
        let fault = Task { () -> (start: UInt64, end: UInt64) in
            try? await Task.sleep(for: .milliseconds(freezeAfter))
            kill(pid, SIGSTOP)
            let start = Monotonic.now
            try? await Task.sleep(for: .milliseconds(freezeFor))
            kill(pid, SIGCONT)
            return (start, Monotonic.now)
        }
        var watches: [Task<(committed: UInt64, id: Int, version: Int, watches: [(Int, Watch)]), Never>] = []
        for change in 1...changes {
            let id = Int.random(in: 1...ids)
            let version = 2_000_000 + change  // above every version `write` gives, which ran first on the table
            let product = Product(id: id, name: "Product \(id)", price: 100 + id + change, version: version)
            try await storage.set(try JSONEncoder().encode(product), forKey: String(id))
            let committed = Monotonic.now
            watches.append(
                Task {
                    let seen = await withTaskGroup(of: (Int, Watch).self) { group in
                        for port in servers {
                            group.addTask {
                                (
                                    port,
                                    await watch(port: port, id: id, version: version, committed: committed, for: window)
                                )
                            }
                        }
                        return await group.reduce(into: [(Int, Watch)]()) { $0.append($1) }
                    }
                    return (committed, id, version, seen)
                }
            )
            try await Task.sleep(for: .milliseconds(interval))
        }
        let (start, end) = await fault.value
        var results: [(committed: UInt64, id: Int, version: Int, watches: [(Int, Watch)])] = []
        for task in watches { results.append(await task.value) }
        await storage.close()
        print(
            "fault: the relay stopped for \(milliseconds(end - start)); staleness (last old version served after the commit) by server and by when the change committed:"
        )
        for port in servers {
            for (phase, range) in [("before", 0..<start), ("during", start..<end), ("after", end..<UInt64.max)] {
                let seen = results.filter { range.contains($0.committed) }.flatMap {
                    $0.watches.filter { $0.0 == port }
                }
                let staleness = seen.filter { $0.1.firstNewReceived != nil }.map(\.1.staleness)
                let missed = seen.count - staleness.count
                print(
                    "  port \(port), \(phase) the fault: \(seen.count) changes, \(percentiles(staleness)); "
                        + "not seen within \(milliseconds(window)): \(missed)"
                )
            }
        }
        for result in results {
            for (port, watch) in result.watches where watch.firstNewReceived == nil {
                let offset = Double(Int64(result.committed) - Int64(start)) / 1e6
                print(
                    "  missed: product \(result.id) version \(result.version), committed "
                        + String(format: "%.0f ms", offset) + " after the fault began, port \(port): "
                        + "\(watch.answers) answers, the last \(watch.last ?? "-")"
                )
            }
        }
    }

    static func milliseconds(_ nanoseconds: UInt64) -> String {
        String(format: "%.1f ms", Double(nanoseconds) / 1e6)
    }

    /// "p50 …, p99 …, max …" of durations in nanoseconds.
    static func percentiles(_ values: [UInt64]) -> String {
        let sorted = values.sorted()
        func at(_ p: Double) -> String {
            guard !sorted.isEmpty else { return "-" }
            let index = max(0, min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1))
            return milliseconds(sorted[index])
        }
        return "p50 \(at(0.5)), p99 \(at(0.99)), max \(at(1.0))"
    }

    /// What the pollers of one server saw after one change, in nanoseconds after the commit.
    struct Watch: Sendable {
        /// When the server last read the old version, or zero if it never did after the commit.
        var staleness: UInt64 = 0
        /// When the first answer with the new version arrived; `nil` if none did within 2 s.
        var firstNewReceived: UInt64?
        var answers = 0
        /// What the last answer without the new version carried ("version 7", "status 500"), or
        /// why there was none.
        var last: String?

        mutating func merge(_ other: Watch) {
            staleness = max(staleness, other.staleness)
            firstNewReceived = [firstNewReceived, other.firstNewReceived].compactMap { $0 }.min()
            answers += other.answers
            last = other.last ?? last
        }
    }

    /// Four pollers ask the server on `port` for product `id`, each until it answers with
    /// `version` or a later one (any answer, for `nil`), or `window` nanoseconds (2 s) have passed
    /// since `committed`, starting 1 ms apart. A later version counts: the product may have
    /// changed again before this server was asked.
    static func watch(
        port: Int,
        id: Int,
        version: Int?,
        committed: UInt64,
        for window: UInt64 = 2_000_000_000
    ) async -> Watch {
        await withTaskGroup(of: Watch.self) { group in
            for poller in 0..<4 {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(poller))
                    return await poll(port: port, id: id, version: version, committed: committed, for: window)
                }
            }
            return await group.reduce(into: Watch()) { $0.merge($1) }
        }
    }

    static func poll(port: Int, id: Int, version: Int?, committed: UInt64, for window: UInt64) async -> Watch {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/products/\(id)")
        var watch = Watch()
        while Monotonic.now - committed < window {
            let response: HTTPClientResponse
            let body: ByteBuffer
            do {
                response = try await HTTPClient.shared.execute(request, timeout: .seconds(2))
                body = try await response.body.collect(upTo: 1 << 20)
            } catch {
                watch.last = "no answer: \(error)"
                continue
            }
            let received = Monotonic.now
            watch.answers += 1
            let text = String(buffer: body)
            let served = text.firstRange(of: #""version":"#).flatMap {
                Int(text[$0.upperBound...].prefix { $0.isNumber })
            }
            if served.map({ $0 >= version ?? .min }) ?? (version == nil) {
                watch.firstNewReceived = received - committed
                return watch
            }
            watch.last = "status \(response.status.code), version \(served.map(String.init) ?? "none")"
            if let servedAt = response.headers.first(name: "Served-At").flatMap(UInt64.init), servedAt > committed {
                watch.staleness = max(watch.staleness, servedAt - committed)
            }
        }
        return watch
    }
}

/// The machine's monotonic clock in nanoseconds: the same in every process, so the writer can
/// compare a server's `Served-At` with its own commit time.
enum Monotonic {
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }
}

extension HTTPField.Name {
    static let servedAt = Self("Served-At")!
}
#else
@main
struct ProductServer {
    static func main() {
        print("ProductServer needs the Server trait: swift run --traits Server ProductServer")
    }
}
#endif
