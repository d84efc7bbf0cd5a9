#if Tracing
import Foundation
import InMemoryTracing
import Strata
import StrataTracing
import Testing
import Tracing
import _StrataInternals
import StrataTestSupport

/// Traced storages and providers record one span per operation, nested under the caller's span,
/// with the storage's name, the operation and hit or miss: never a key or a value.
@Suite struct TracingTests {
    struct Fetched: Error {}

    @Test func eachOperationIsASpanWithItsNameOperationAndHitOrMiss() async throws {
        let tracer = InMemoryTracer()
        let storage = MemoryStorage<String, String>().traced(as: "cities", tracer: tracer)

        try await storage.set("Lviv", forKey: "secret-key-1")
        _ = try await storage.value(forKey: "secret-key-1")
        _ = try await storage.value(forKey: "secret-key-2")
        try await storage.update(forKey: "secret-key-1") { $0 = "Kyiv" }
        try await storage.removeValue(forKey: "secret-key-1")
        _ = try await storage.keys()
        #expect(try await storage.removeExpired() == 0)
        try await storage.removeAll()

        let spans = tracer.finishedSpans
        #expect(
            spans.map(\.operationName) == [
                "set cities", "get cities", "get cities", "update cities", "remove cities", "keys cities",
                "removeExpired cities", "removeAll cities",
            ]
        )
        #expect(spans.allSatisfy { $0.attributes["strata.storage"]?.toSpanAttribute() == "cities" })
        #expect(spans[1].attributes["strata.hit"]?.toSpanAttribute() == true)
        #expect(spans[2].attributes["strata.hit"]?.toSpanAttribute() == false)
        #expect(spans[0].attributes["strata.hit"] == nil)
        #expect(spans.allSatisfy { $0.kind == .client })
        for span in spans {
            var described = ""
            // swift-format-ignore: ReplaceForEachWithForLoop
            span.attributes.forEach { name, value in described += "\(name)=\(value) " }  // not a Sequence
            #expect(!described.contains("secret"), "a key reached a span: \(described)")
            #expect(!described.contains("Lviv") && !described.contains("Kyiv"), "a value reached a span")
        }
    }

    @Test func bulkCallsAreOneSpanEachWithCountsAndNoKeys() async throws {
        let tracer = InMemoryTracer()
        let storage = MemoryStorage<String, String>().traced(as: "cities", tracer: tracer)
        let provider = BatchProvider { (ids: [String]) in Dictionary(uniqueKeysWithValues: ids.map { ($0, "v") }) }
            .traced(as: "origin", tracer: tracer)

        try await storage.setValues([("secret-1", "Lviv"), ("secret-2", "Kyiv")])
        _ = try await storage.values(forKeys: ["secret-1", "secret-3", "secret-2"])
        _ = try await provider.values(for: ["secret-4", "secret-5"])

        let spans = tracer.finishedSpans
        #expect(spans.map(\.operationName) == ["setMany cities", "getMany cities", "fetch origin"])
        #expect(spans[0].attributes["strata.keys"]?.toSpanAttribute() == 2)
        #expect(spans[1].attributes["strata.keys"]?.toSpanAttribute() == 3)
        #expect(spans[1].attributes["strata.hits"]?.toSpanAttribute() == 2)
        #expect(spans[2].attributes["strata.ids"]?.toSpanAttribute() == 2)
        for span in spans {
            var described = ""
            // swift-format-ignore: ReplaceForEachWithForLoop
            span.attributes.forEach { name, value in described += "\(name)=\(value) " }  // not a Sequence
            #expect(!described.contains("secret"), "a key reached a span: \(described)")
        }
    }

    @Test func spansNestUnderTheCallersSpanAndLayersUnderEachOther() async throws {
        let tracer = InMemoryTracer()
        let memory = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(7, forKey: "a")
        let chain = memory.traced(as: "front", tracer: tracer)
            .combined(with: back.traced(as: "back", tracer: tracer))
            .traced(as: "chain", tracer: tracer)

        let request = tracer.startSpan("request")
        let value = try await ServiceContext.$current.withValue(request.context) {
            try await chain.value(forKey: "a")
        }
        request.end()

        #expect(value == 7)
        let spans = Dictionary(
            tracer.finishedSpans.map { ($0.operationName, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        let chainSpan = try #require(spans["get chain"])
        let backSpan = try #require(spans["get back"])
        let requestSpan = try #require(spans["request"])
        #expect(chainSpan.parentSpanID == requestSpan.spanID)
        #expect(backSpan.parentSpanID == chainSpan.spanID)
        #expect(backSpan.traceID == requestSpan.traceID)
        #expect(backSpan.attributes["strata.hit"]?.toSpanAttribute() == true)
    }

    @Test func anImmediateAnswerIsASpanAndAnUnavailableOneIsNot() async throws {
        let tracer = InMemoryTracer()
        let memory = MemoryStorage<String, Int>()
        memory.set(1, forKey: "a")
        let traced = memory.traced(as: "memory", tracer: tracer)

        _ = try traced.immediateValue(forKey: "a")
        _ = try traced.immediateValue(forKey: "b")

        let spans = tracer.finishedSpans
        #expect(spans.map(\.operationName) == ["get memory", "get memory"])
        #expect(spans.map { $0.attributes["strata.hit"]?.toSpanAttribute() } == [true, false])

        let provider = AnyProvider { (id: String) in id.count }
        let viaSource = provider.cache(MemoryStorage<String, Int>()).traced(as: "lengths", tracer: tracer)
        tracer.clearFinishedSpans()
        guard case .unavailable = try viaSource.immediateValue(for: "abc") else {
            Issue.record("an empty cache answered at once")
            return
        }
        #expect(tracer.finishedSpans.isEmpty)
        _ = try await viaSource.value(for: "abc")
        tracer.clearFinishedSpans()
        guard case .found(3) = try viaSource.immediateValue(for: "abc") else {
            Issue.record("a cached value was not answered at once")
            return
        }
        #expect(tracer.finishedSpans.map(\.operationName) == ["fetch lengths"])
        #expect(tracer.finishedSpans.first?.attributes["strata.hit"]?.toSpanAttribute() == true)
    }

    @Test func aFailureIsRecordedWithItsCodeButNotItsMessage() async throws {
        let tracer = InMemoryTracer()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-tracing-\(UUID())")
        defer { FolderRemoval.remove(folder) }
        let disk = try DiskStorage(url: folder).traced(as: "disk", tracer: tracer)
        let longKey = "secret-" + String(repeating: "k", count: 1 << 20)

        await #expect(throws: StorageError.self) { try await disk.set(Data("x".utf8), forKey: longKey) }

        let span = try #require(tracer.finishedSpans.first)
        #expect(span.status?.code == .error)
        let failure = try #require(span.errors.first?.error as? TracedFailure)
        #expect(failure.code == "invalidKey")
        #expect(!"\(failure)".contains("secret"))
        #expect(span.status?.message?.contains("secret") != true)
    }

    @Test func aTracedProviderRecordsOneSpanPerSourceCall() async throws {
        let tracer = InMemoryTracer()
        let calls = Calls()
        let lengths = AnyProvider { (word: String) -> Int in
            calls.increment()
            if word.isEmpty { throw Fetched() }
            return word.count
        }
        .traced(as: "lengths.source", tracer: tracer)
        .cache(MemoryStorage<String, Int>())

        #expect(try await lengths.value(for: "strata") == 6)
        #expect(try await lengths.value(for: "strata") == 6)
        await #expect(throws: StorageError.self) { try await lengths.value(for: "") }

        let spans = tracer.finishedSpans
        #expect(spans.map(\.operationName) == ["fetch lengths.source", "fetch lengths.source"])
        #expect(spans.allSatisfy { $0.attributes["strata.provider"]?.toSpanAttribute() == "lengths.source" })
        #expect(spans[0].status == nil)
        #expect(spans[1].status?.code == .error)
        #expect(calls.count == 2)
    }

    @Test func aTracedStorageKeepsLifetimesForTheFrameworkAdapters() async throws {
        let tracer = InMemoryTracer()
        let storage = MemoryStorage<String, Data>().traced(as: "sessions", tracer: tracer)

        try await storage.update(forKey: "s", timeToLive: .seconds(60)) { $0 = Data("1".utf8) }
        let lifetime = try await storage.lifetime(forKey: "s")

        guard case .remaining(let left)? = lifetime else {
            Issue.record("expected a remaining lifetime, saw \(String(describing: lifetime))")
            return
        }
        #expect(left <= .seconds(60) && left > .seconds(50))
        #expect(tracer.finishedSpans.map(\.operationName) == ["update sessions", "lifetime sessions"])
    }
}

/// A counter any task may use.
final class Calls: Sendable {
    private let value = LockedState(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
#endif
