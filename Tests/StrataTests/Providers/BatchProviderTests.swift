import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Loading many IDs at once: one source call for what no cache holds and no other request is
/// fetching, overlapping requests sharing fetches, and `interject`.
@Suite struct BatchProviderTests {
    struct Refused: Error {}

    // MARK: BatchProvider

    @Test func aBatchSourceIsAskedForEachDistinctIDOnceInCallsOfAtMostTheMaximum() async throws {
        let probe = SourceProbe()
        let provider = BatchProvider(maximumBatchSize: 3) { ids in try await probe.fetchMany(ids) }

        let values = try await provider.values(for: ["1", "2", "2", "3", "4", "5", "6", "7", "1"])

        #expect(values == ["1", "2", "2", "3", "4", "5", "6", "7", "1"].map { "value of \($0)" })
        #expect(probe.batches == [["1", "2", "3"], ["4", "5", "6"], ["7"]])
        #expect(try await provider.value(for: "9") == "value of 9")
        #expect(probe.batches.last == ["9"])
        #expect(try await provider.values(for: []).isEmpty)
        #expect(probe.calls == 4)
    }

    @Test func anIDTheSourceLeavesOutFailsTheRequestAsNotFoundNamingIt() async throws {
        let provider = BatchProvider { (ids: [String]) in
            Dictionary(uniqueKeysWithValues: ids.filter { $0 != "gone" }.map { ($0, $0.count) })
        }

        let error = await #expect(throws: StorageError.self) {
            try await provider.values(for: ["here", "gone", "there"])
        }

        #expect(error?.code == .notFound)
        #expect(error?.key == "gone")
    }

    @Test func aFailingBatchSourceIsSourceFailed() async throws {
        let provider = BatchProvider(name: "Catalog") { (_: [Int]) -> [Int: String] in throw Refused() }

        let error = await #expect(throws: StorageError.self) { try await provider.values(for: [1, 2]) }

        #expect(error?.code == .sourceFailed)
        #expect(error?.storage == "Catalog")
        #expect(error?.underlying is Refused)
    }

    @Test func aBatchSizeThatIsNotPositiveStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = BatchProvider(name: "Catalog", maximumBatchSize: 0) { (_: [Int]) -> [Int: String] in [:] }
        }

        expectStop(stopped?.standardErrorContent, saying: "Catalog: maximumBatchSize must be positive, got 0")
    }

    // MARK: Cached

    @Test func aCacheIsReadOnceAndOnlyWhatItLacksIsFetchedInOneCallAndStored() async throws {
        let probe = SourceProbe()
        let memory = MemoryStorage<String, String>()
        memory.set("cached a", forKey: "a")
        memory.set("cached c", forKey: "c")
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }.cache(memory)

        let first = try await provider.values(for: ["a", "b", "c", "d", "e"])
        let second = try await provider.values(for: ["e", "d", "a"])

        #expect(first == ["cached a", "value of b", "cached c", "value of d", "value of e"])
        #expect(second == ["value of e", "value of d", "cached a"])
        #expect(probe.batches == [["b", "d", "e"]])
        #expect(memory.count == 5)
    }

    @Test func aFailingCacheIsReportedAndTheSourceAnswersEveryID() async throws {
        let probe = SourceProbe()
        let cache = FailingStorage<String, String>(failing: [.read, .set])
        let reported = LockedState<[StorageError.Code]>([])
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }
            .cache(cache, reporting: { error in reported.withLock { $0.append(error.code) } })

        let values = try await provider.values(for: ["a", "b"])

        #expect(values == ["value of a", "value of b"])
        #expect(probe.batches == [["a", "b"]])
        #expect(reported.withLock { $0 } == [.io, .io])
    }

    @Test func aCachedValueThatDoesNotDecodeIsFetchedAgainAndReported() async throws {
        let probe = SourceProbe()
        let memory = MemoryStorage<String, Data>()
        memory.set(Data("{".utf8), forKey: "a")
        let reported = LockedState<[StorageError.Code]>([])
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }
            .cache(
                memory.json(String.self),
                reporting: { error in reported.withLock { $0.append(error.code) } }
            )

        let values = try await provider.values(for: ["a", "b"])

        #expect(values == ["value of a", "value of b"])
        #expect(probe.batches == [["a", "b"]])
        #expect(reported.withLock { $0 } == [.decodingFailed])
        #expect(memory.value(forKey: "a") == Data("\"value of a\"".utf8))
    }

    // MARK: Coordinated

    @Test func overlappingBatchesAndSingleRequestsShareTheirFetches() async throws {
        let probe = SourceProbe(held: true)
        defer { probe.open() }  // a failed expectation must not leave a fetch held
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }
            .cache(MemoryStorage<String, String>())
            .coordinated()

        async let first = provider.values(for: ["a", "b", "c"])
        await probe.waitForCalls(1)
        async let second = provider.values(for: ["c", "d", "b"])
        await probe.waitForCalls(2)
        async let single = provider.value(for: "a")
        try #require(await eventually { provider.waitersInFlight == 7 }, "every request joined")
        probe.open()

        #expect(try await first == ["value of a", "value of b", "value of c"])
        #expect(try await second == ["value of c", "value of d", "value of b"])
        #expect(try await single == "value of a")
        #expect(probe.batches == [["a", "b", "c"], ["d"]])
        #expect(provider.fetchesInFlight == 0)
        #expect(try await provider.values(for: ["d", "a"]) == ["value of d", "value of a"])
        #expect(probe.calls == 2, "cached values are answered without a fetch")
    }

    @Test func aCancelledBatchAloneCancelsItsFetch() async throws {
        let probe = SourceProbe(held: true)
        defer { probe.open() }  // a failed expectation must not leave a fetch held
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }.coordinated()

        let request = Task { try await provider.values(for: ["a", "b"]) }
        await probe.waitForCalls(1)
        request.cancel()
        let error = await #expect(throws: StorageError.self) { try await request.value }
        probe.open()
        try #require(await eventually { provider.fetchesInFlight == 0 && probe.cancellations != 0 })

        #expect(error?.code == .cancelled)
        #expect(probe.cancellations == 1)
        #expect(provider.cancellationMarks == 0)
    }

    @Test func aCancelledBatchLeavesTheFetchToARequestThatSharesOneOfItsIDs() async throws {
        let probe = SourceProbe(held: true)
        defer { probe.open() }  // a failed expectation must not leave a fetch held
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }.coordinated()

        let batch = Task { try await provider.values(for: ["a", "b"]) }
        await probe.waitForCalls(1)
        let single = Task { try await provider.value(for: "b") }
        try #require(await eventually { provider.waitersInFlight == 3 }, "every request joined")
        batch.cancel()
        let error = await #expect(throws: StorageError.self) { try await batch.value }
        probe.open()

        #expect(error?.code == .cancelled)
        #expect(try await single.value == "value of b")
        #expect(probe.cancellations == 0)
        #expect(probe.calls == 1)
    }

    @Test func aFailedBatchFetchFailsEveryRequestWaitingOnIt() async throws {
        let probe = SourceProbe(held: true, failing: 1)
        defer { probe.open() }  // a failed expectation must not leave a fetch held
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }.coordinated()

        let batch = Task { try await provider.values(for: ["a", "b"]) }
        await probe.waitForCalls(1)
        let single = Task { try await provider.value(for: "a") }
        try #require(await eventually { provider.waitersInFlight == 3 }, "every request joined")
        probe.open()
        let batchError = await #expect(throws: StorageError.self) { try await batch.value }
        let singleError = await #expect(throws: StorageError.self) { try await single.value }

        #expect(batchError?.code == .sourceFailed)
        #expect(singleError?.code == .sourceFailed)
        #expect(try await provider.values(for: ["a", "b"]) == ["value of a", "value of b"], "a failure is not kept")
    }

    /// The interleaving forced on the coordinator's state: every waiter of fetch 1 leaves, a new
    /// request starts fetch 2 for the same ID, then fetch 1's task finishes. It must not take
    /// fetch 2's waiters, which would get fetch 1's (cancelled) result.
    @Test func aFetchThatFinishesAfterANewerOneStartedLeavesTheNewerOneAlone() async throws {
        var state = CoordinationState<String, Int>()
        let collector = BatchCollector<Int>(count: 1)
        guard case .startFetch(_, let first, _) = state.register(1, for: ["a"], collector: collector) else {
            Issue.record("the first request did not start a fetch")
            return
        }
        _ = state.cancel(1, forAll: ["a"])
        guard case .startFetch(let claimed, let second, _) = state.register(2, for: ["a"], collector: collector)
        else {
            Issue.record("the second request did not start a fetch")
            return
        }

        let stale = state.finishBatch(["a"], serial: first)

        #expect(claimed == ["a"])
        #expect(first != second)
        #expect(stale.map(\.count) == [0], "the stale fetch found no waiter of its own")
        #expect(state.fetches["a"]?.serial == second)
        #expect(state.finishBatch(["a"], serial: second).map(\.count) == [1])
    }

    // MARK: Other modifiers

    @Test func interjectAnswersSomeIDsAndTheSourceIsAskedOnceForTheRest() async throws {
        let probe = SourceProbe()
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }
            .interject { id in id.hasPrefix("local") ? "here: \(id)" : nil }

        let values = try await provider.values(for: ["local1", "remote1", "local2", "remote2"])
        let single = try await provider.value(for: "local3")
        let immediate = try provider.immediateValue(for: "local4")

        #expect(values == ["here: local1", "value of remote1", "here: local2", "value of remote2"])
        #expect(single == "here: local3")
        guard case .found("here: local4") = immediate else {
            Issue.record("an interjected value is not answered at once: \(immediate)")
            return
        }
        #expect(probe.batches == [["remote1", "remote2"]])
    }

    @Test func anInterjectionThatThrowsFailsTheRequestAsSourceFailed() async throws {
        let provider = AnyProvider { (id: String) in id }.interject { _ in throw Refused() }

        let error = await #expect(throws: StorageError.self) { try await provider.values(for: ["a"]) }

        #expect(error?.code == .sourceFailed)
        #expect(error?.underlying is Refused)
    }

    @Test func mappedRetriedAndConcurrencyLimitedProvidersPassABatchDownInOneCall() async throws {
        let probe = SourceProbe(failing: 1)
        let provider = BatchProvider { ids in try await probe.fetchMany(ids) }
            .retrying(
                maximumAttemptCount: 2,
                backoff: .init(initial: .milliseconds(1), maximum: .milliseconds(1)),
                when: { _ in true }
            )
            .concurrent(maximumRequestCount: 1)
            .mapIDs { (number: Int) in "n\(number)" }
            .mapValues { value, number in "\(number): \(value)" }

        let values = try await provider.values(for: [1, 2])

        #expect(values == ["1: value of n1", "2: value of n2"])
        #expect(probe.batches == [["n1", "n2"], ["n1", "n2"]], "the failed call was retried whole, once")
    }

    /// A provider whose batch answer has the wrong number of values.
    struct ShortProvider: Provider {
        func value(for id: String) async throws(StorageError) -> String { id }
        func values(for ids: [String]) async throws(StorageError) -> [String] { Array(ids.dropLast()) }
    }

    @Test func aBatchAnswerOfTheWrongLengthIsSourceFailedAtEveryLayer() async throws {
        let cached = ShortProvider().cache(MemoryStorage<String, String>())
        let coordinated = ShortProvider().coordinated()
        let interjected = ShortProvider().interject { _ in nil }

        let errors = [
            await #expect(throws: StorageError.self) { try await cached.values(for: ["a", "b"]) },
            await #expect(throws: StorageError.self) { try await coordinated.values(for: ["a", "b"]) },
            await #expect(throws: StorageError.self) { try await interjected.values(for: ["a", "b"]) },
        ]

        #expect(errors.map { $0?.code } == [.sourceFailed, .sourceFailed, .sourceFailed])
        #expect(errors.allSatisfy { $0?.message.contains("1 values for 2 IDs") == true })
        #expect(coordinated.fetchesInFlight == 0)
    }

    @Test func theDefaultAsksForEachIDInTurn() async throws {
        let probe = SourceProbe()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }

        let values = try await provider.values(for: ["a", "b", "a"])

        #expect(values == ["value of a", "value of b", "value of a"])
        #expect(probe.calls == 3)
    }
}
