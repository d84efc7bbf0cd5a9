import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

/// An object whose decoding records the thread it ran on.
struct Probed: Codable, Identifiable, Sendable {
    /// Where every decoding ran; shared by the tests of this file, each of which resets it.
    nonisolated(unsafe) static var probe: ThreadProbe?

    var id: Int
    var name: String

    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        Self.probe?.record()
    }
}

/// Queries, loading a whole store and a LiveQuery's refresh decode on Strata's I/O threads,
/// never on the main actor that awaits them.
@Suite(.serialized) struct ObjectStoreThreadTests {
    @MainActor
    @Test func aMainActorQueryDecodesAndFiltersOffTheMainThread() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let probe = ThreadProbe()
        Probed.probe = probe
        defer { Probed.probe = nil }
        var options = ObjectStore<Probed>.Options()
        options.keepsObjectsInMemory = false
        let store = try ObjectStore<Probed>(url: folder.url, options: options)
        try await store.save(contentsOf: (0..<50).map { Probed(id: $0, name: "object \($0)") })
        probe.reset()
        let caller = ThreadProbe.currentThread

        let everything = try await store.all()
        let some = try await store.objects(matching: #Predicate { $0.id < 10 }, sortedBy: [SortDescriptor(\.id)])

        #expect(everything.count == 50)
        #expect(some.map(\.id) == Array(0..<10))
        #expect(probe.sightings.count >= 100, "every object was decoded for each call")
        #expect(probe.sightings.allSatisfy { !$0.isMainThread && $0.isIOThread && $0.thread != caller })
    }

    @MainActor
    @Test func aLiveQueryRefreshDecodesOffTheMainThread() async throws {
        let probe = ThreadProbe()
        Probed.probe = probe
        defer { Probed.probe = nil }
        var options = ObjectStore<Probed>.Options()
        options.keepsObjectsInMemory = false
        let store = ObjectStore<Probed>.inMemory(options: options)
        try await store.save(contentsOf: (0..<20).map { Probed(id: $0, name: "object \($0)") })
        let query = store.liveQuery(matching: #Predicate { $0.id % 2 == 0 }, sortedBy: [SortDescriptor(\.id)])
        probe.reset()
        let caller = ThreadProbe.currentThread

        await query.refresh()

        #expect(query.results.map(\.id) == Array(stride(from: 0, to: 20, by: 2)))
        #expect(!probe.sightings.isEmpty)
        #expect(
            probe.sightings.allSatisfy { !$0.isMainThread && $0.isIOThread && $0.thread != caller },
            "\(probe.sightings)"
        )
    }
}
