import Foundation
import Strata
import StrataTestSupport
import Testing
import _StrataInternals

@Suite struct ProviderTests {
    @Test func sourceErrorsBecomeSourceFailedWithTheOriginalUnderneath() async throws {
        let probe = SourceProbe(failing: 1)
        let provider = AnyProvider(name: "images") { (id: String) in try await probe.fetch(id) }

        let error = await #expect(throws: StorageError.self) { try await provider.value(for: "a") }

        #expect(error?.code == .sourceFailed)
        #expect(error?.storage == "images")
        #expect(error?.key == "a")
        #expect(error?.underlying is ProbeFailure)
    }

    @Test func mapIDAndMapValueConvertBothWays() async throws {
        let provider = AnyProvider { (id: String) in "<\(id)>" }
            .mapIDs { (number: Int) in "n\(number)" }
            .mapValues { value, id in "\(value) for \(id)" }

        #expect(try await provider.value(for: 7) == "<n7> for 7")
    }

    @Test func aValueThatFailsValidationIsNeverCached() async throws {
        let probe = SourceProbe()
        let cache = MemoryStorage<String, Int>()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .mapValues { value, _ -> Int in
                guard let number = Int(value.split(separator: " ").last ?? "") else {
                    throw CodecError(message: "not a number")
                }
                return number
            }
            .cache(cache)

        let error = await #expect(throws: StorageError.self) { try await provider.value(for: "x") }

        #expect(error?.code == .decodingFailed)
        #expect(cache.count == 0)
    }

    @Test func aCacheHitSkipsTheSource() async throws {
        let probe = SourceProbe()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.cache(MemoryStorage<String, String>())

        let first = try await provider.value(for: "a")
        let second = try await provider.value(for: "a")

        #expect(first == "value of a")
        #expect(second == first)
        #expect(probe.calls == 1)
    }

    @Test func aFailureIsNotCachedAndTheNextRequestRetries() async throws {
        let probe = SourceProbe(failing: 1)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.cache(MemoryStorage<String, String>())

        await #expect(throws: StorageError.self) { try await provider.value(for: "a") }
        let value = try await provider.value(for: "a")

        #expect(value == "value of a")
        #expect(probe.calls == 2)
    }

    @Test func aFailedCacheWriteDoesNotFailTheFetchAndIsReported() async throws {
        let probe = SourceProbe()
        let reports = LockedState<[StorageError]>([])
        let broken = FailingStorage<String, String>(failing: [.set])
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(broken) { error in reports.withLock { $0.append(error) } }

        let value = try await provider.value(for: "a")

        #expect(value == "value of a")
        #expect(reports.withLock { $0.count } == 1)
        #expect(reports.withLock { $0.first?.code } == .io)
    }

    @Test func anUnreadableCachedValueFallsThroughToTheSource() async throws {
        let probe = SourceProbe()
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data([0xFF, 0xFE]), forKey: "a")
        let reports = LockedState<[StorageError]>([])
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(
                bytes,
                toStorage: { value, _ in Data(value.utf8) },
                fromStorage: { data, _ in String(data: data, encoding: .utf8) },
                reporting: { error in reports.withLock { $0.append(error) } }
            )

        let value = try await provider.value(for: "a")

        #expect(value == "value of a")
        #expect(probe.calls == 1)
        #expect(bytes.value(forKey: "a") == Data("value of a".utf8))
    }

    @Test func aCachedValueThatFailsToDecodeIsReportedAndRefetched() async throws {
        let probe = SourceProbe()
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("garbage".utf8), forKey: "a")
        let reports = LockedState<[StorageError]>([])
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(
                bytes,
                toStorage: { value, _ in try JSONEncoder().encode(value) },
                fromStorage: { data, _ in try JSONDecoder().decode(String.self, from: data) },
                reporting: { error in reports.withLock { $0.append(error) } }
            )

        let value = try await provider.value(for: "a")

        #expect(value == "value of a")
        #expect(reports.withLock { $0.map(\.code) } == [.decodingFailed])
    }

    @Test func anyAsyncProviderWrapsAChainOrAMock() async throws {
        let real = AnyProvider(AnyProvider { (id: String) in id.uppercased() }.coordinated())
        let mock = AnyProvider<String, String> { id in "mock \(id)" }

        #expect(try await real.value(for: "a") == "A")
        #expect(try await mock.value(for: "a") == "mock a")
    }

    @Test func syncProviderAnswersWithoutAwaitAndJoinsAsyncChains() async throws {
        let squares = SyncProvider { (number: Int) in number * number }

        let direct = try squares.value(for: 4)
        let cached = try await squares.cache(MemoryStorage<Int, Int>()).value(for: 5)

        #expect(direct == 16)
        #expect(cached == 25)
    }
}

@Suite struct CoordinatedProviderTests {
    @Test func concurrentRequestsForOneIDMakeOneSourceCall() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask { try await provider.value(for: "a") }
            }
            await probe.waitForCalls(1)
            // Give every request the chance to join before the fetch completes.
            while provider.fetchesInFlight == 0 { await Task.yield() }
            for _ in 0..<100 { await Task.yield() }
            probe.open()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }

        #expect(results.count == 50)
        #expect(Set(results) == ["value of a"])
        #expect(probe.calls == 1)
    }

    @Test func everyWaiterReceivesTheSharedErrorAndTheNextRequestFetchesAgain() async throws {
        let probe = SourceProbe(held: true, failing: 1)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let failures = await withTaskGroup(of: StorageError.Code?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do throws(StorageError) {
                        _ = try await provider.value(for: "a")
                        return nil
                    } catch {
                        return error.code
                    }
                }
            }
            await probe.waitForCalls(1)
            for _ in 0..<100 { await Task.yield() }
            probe.open()
            return await group.reduce(into: [StorageError.Code?]()) { $0.append($1) }
        }
        let retried = try await provider.value(for: "a")

        #expect(failures.count == 10)
        let codes = failures.compactMap { $0 }
        #expect(!codes.isEmpty)
        #expect(codes.allSatisfy { $0 == .sourceFailed })
        #expect(retried == "value of a")
        #expect(probe.calls >= 2)
    }

    @Test func requestsForDifferentIDsRunInParallel() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        async let a = provider.value(for: "a")
        async let b = provider.value(for: "b")
        await probe.waitForCalls(2)

        #expect(probe.maximumInFlight == 2)
        probe.open()
        #expect(try await a == "value of a")
        #expect(try await b == "value of b")
    }

    @Test func aCancelledWaiterLeavesWithoutCancellingTheFetchForOthers() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let staying = Task { try await provider.value(for: "a") }
        await probe.waitForCalls(1)
        let leaving = Task { try await provider.value(for: "a") }
        for _ in 0..<100 { await Task.yield() }
        leaving.cancel()
        let leavingResult = await leaving.result
        probe.open()
        let stayingValue = try await staying.value

        #expect(stayingValue == "value of a")
        #expect(probe.calls == 1)
        #expect(probe.cancellations == 0)
        #expect(throws: StorageError.self) { try leavingResult.get() }
        if case .failure(let error as StorageError) = leavingResult {
            #expect(error.code == .cancelled)
        }
    }

    /// The index that finds a waiter to cancel is built by the first cancellation; waiters that
    /// join after it can leave too, each alone, while the others keep waiting for the one fetch.
    @Test func waitersThatJoinAfterACancellationCanLeaveToo() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let early = (0..<3).map { _ in Task { try await provider.value(for: "a") } }
        await probe.waitForCalls(1)
        while provider.waitersInFlight < 3 { await Task.yield() }
        early[0].cancel()
        _ = await early[0].result
        let late = (0..<3).map { _ in Task { try await provider.value(for: "a") } }
        while provider.waitersInFlight < 5 { await Task.yield() }
        late[1].cancel()
        let cancelled = await late[1].result

        #expect(provider.waitersInFlight == 4)
        probe.open()
        for task in [early[1], early[2], late[0], late[2]] {
            #expect(try await task.value == "value of a")
        }
        #expect(probe.calls == 1)
        #expect(probe.cancellations == 0)
        #expect(throws: StorageError.self) { try cancelled.get() }
        if case .failure(let error as StorageError) = cancelled {
            #expect(error.code == .cancelled)
        }
    }

    @Test func whenEveryWaiterCancelsTheFetchIsCancelled() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let first = Task { try await provider.value(for: "a") }
        let second = Task { try await provider.value(for: "a") }
        await probe.waitForCalls(1)
        first.cancel()
        second.cancel()
        _ = await first.result
        _ = await second.result
        while provider.fetchesInFlight != 0 { await Task.yield() }
        probe.open()
        while probe.cancellations == 0 { await Task.yield() }

        #expect(probe.cancellations == 1)
        #expect(probe.calls == 1)
    }

    @Test func aRequestCancelledBeforeItStartsNeverCallsTheSource() async throws {
        let probe = SourceProbe()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await provider.value(for: "a")
        }
        let result = await task.result

        #expect(throws: StorageError.self) { try result.get() }
        #expect(provider.fetchesInFlight == 0)
        #expect(probe.calls == 0)
        #expect(provider.cancellationMarks == 0)
    }

    @Test func cancellationsRacingTheAnswerResumeEveryWaiterOnceAndLeaveNothingBehind() async throws {
        let provider = AnyProvider { (id: Int) in
            await Task.yield()
            return id
        }
        .coordinated()

        var outcomes: [Bool] = []
        for round in 0..<300 {
            let tasks = (0..<8).map { _ in Task { try await provider.value(for: round % 3) } }
            for (index, task) in tasks.enumerated() where index.isMultiple(of: 2) {
                task.cancel()
            }
            for task in tasks {
                switch await task.result {
                case .success(let value): outcomes.append(value == round % 3)
                case .failure(let error): outcomes.append((error as? StorageError)?.code == .cancelled)
                }
            }
        }

        #expect(outcomes.count == 300 * 8)
        #expect(outcomes.allSatisfy { $0 })
        #expect(provider.fetchesInFlight == 0)
        #expect(provider.waitersInFlight == 0)
        #expect(provider.cancellationMarks == 0)
    }

    @Test func aCancellationArrivingAfterTheAnswerIsForgottenWhenTheRequestReturns() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()
        let executor = ManualTaskExecutor()
        let request = Task(executorPreference: executor) { try await provider.value(for: "a") }
        executor.runPending()
        await probe.waitForCalls(1)

        // The answer resumes the request, whose job then waits on the manual executor.
        probe.open()
        let resumed = await eventually { executor.pendingCount > 0 }
        request.cancel()
        let marksWhileResumed = provider.cancellationMarks
        executor.runPending()
        let value = try await request.value

        #expect(resumed)
        #expect(marksWhileResumed == 1)
        #expect(value == "value of a")
        #expect(provider.cancellationMarks == 0)
    }
}

extension CoordinatedProviderTests {
    @Test func waitersAreResumedInTheOrderTheyArrived() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated()
        let executor = ManualTaskExecutor()
        let order = LockedState<[Int]>([])
        let requests = (0..<32).map { index in
            Task(executorPreference: executor) {
                let value = try await provider.value(for: "a")
                order.withLock { $0.append(index) }
                return value
            }
        }
        executor.runPending()
        await probe.waitForCalls(1)

        probe.open()
        let allResumed = await eventually { executor.pendingCount == requests.count }
        executor.runPending()
        for request in requests {
            _ = try await request.value
        }

        #expect(allResumed)
        #expect(order.withLock { $0 } == Array(0..<32))
    }
}

/// A task executor that runs its jobs only when told to, so a test can hold a task between being
/// resumed and running. Any task may use it.
final class ManualTaskExecutor: TaskExecutor {
    private let jobs = LockedState<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// The number of jobs waiting to run.
    var pendingCount: Int {
        jobs.withLock { $0.count }
    }

    /// Runs every waiting job, and those they enqueue, on the calling thread.
    func runPending() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
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

@Suite struct ConcurrentProviderTests {
    @Test func serializedPassesOneRequestAtATime() async throws {
        let probe = SourceProbe()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.serialized()

        try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask { try await provider.value(for: "k\(index)") }
            }
            try await group.waitForAll()
        }

        #expect(probe.calls == 20)
        #expect(probe.maximumInFlight == 1)
    }

    @Test func concurrentLimitCapsRequestsInFlight() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.concurrent(maximumRequestCount: 3)

        try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<12 {
                group.addTask { try await provider.value(for: "k\(index)") }
            }
            await probe.waitForCalls(3)
            for _ in 0..<200 { await Task.yield() }
            #expect(probe.calls == 3)
            probe.open()
            try await group.waitForAll()
        }

        #expect(probe.calls == 12)
        #expect(probe.maximumInFlight == 3)
    }
}

@Suite struct RetryingProviderTests {
    @Test func retriesUntilTheSourceSucceeds() async throws {
        let probe = SourceProbe(failing: 2)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .retrying(maximumAttemptCount: 3, backoff: Backoff(initial: .milliseconds(1)))

        let value = try await provider.value(for: "a")

        #expect(value == "value of a")
        #expect(probe.calls == 3)
    }

    @Test func givesUpAfterMaxAttemptsWithTheLastError() async throws {
        let probe = SourceProbe(failing: 10)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .retrying(maximumAttemptCount: 4, backoff: Backoff(initial: .milliseconds(1)))

        let error = await #expect(throws: StorageError.self) { try await provider.value(for: "a") }

        #expect(error?.code == .sourceFailed)
        #expect(probe.calls == 4)
    }

    @Test func doesNotRetryValuesThatDoNotDecode() async throws {
        let probe = SourceProbe()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .mapValues { _, _ -> Int in throw CodecError(message: "bad") }
            .retrying(maximumAttemptCount: 5, backoff: Backoff(initial: .milliseconds(1)))

        await #expect(throws: StorageError.self) { try await provider.value(for: "a") }

        #expect(probe.calls == 1)
    }

    @Test(arguments: [0.0, 0.5, 0.999])
    func backoffGrowsExponentiallyWithinItsJitterAndMaximum(random: Double) {
        let backoff = Backoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(1), jitter: 0.5)

        let first = backoff.delay(afterAttempt: 1, random: random)
        let third = backoff.delay(afterAttempt: 3, random: random)
        let tenth = backoff.delay(afterAttempt: 10, random: random)

        #expect(first >= .milliseconds(50) && first <= .milliseconds(100))
        #expect(third >= .milliseconds(200) && third <= .milliseconds(400))
        #expect(tenth >= .milliseconds(500) && tenth <= .seconds(1))
    }
}

@Suite struct TimeoutProviderTests {
    @Test func aSlowSourceTimesOut() async throws {
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.timeout(.milliseconds(50))

        let (error, elapsed) = await TestThreads.timed {
            await #expect(throws: StorageError.self) { try await provider.value(for: "a") }
        }

        #expect(error?.code == .timedOut)
        #expect(elapsed < .milliseconds(50) + .seconds(1), "the limit reported after \(elapsed)")
        probe.open()
    }

    /// A `ManualClock` drives a time limit: the request waits while the clock stands still and
    /// short of the limit, and times out the moment the clock reaches it.
    @Test func aManualClockDrivesTheLimit() async throws {
        let probe = SourceProbe(held: true)
        let clock = ManualClock()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .timeout(.seconds(5), clock: clock.waits)

        let request = Task { () async throws(StorageError) -> String in try await provider.value(for: "a") }
        while clock.waitCount == 0 { await Task.yield() }
        clock.advance(by: .seconds(4))
        #expect(clock.waitCount == 1, "the limit is not reached at 4 of 5 seconds")
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: StorageError.self) { try await request.value }

        #expect(error?.code == .timedOut)
        #expect(clock.waitCount == 0)
        probe.open()
    }

    /// A wait on a `ManualClock` ends when its task is cancelled, registered or not yet.
    @Test func aWaitOnAManualClockEndsWhenItsTaskIsCancelled() async throws {
        let clock = ManualClock()
        let waiting = Task { try await clock.waits.sleep(for: .seconds(60)) }
        while clock.waitCount == 0 { await Task.yield() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(clock.waitCount == 0)

        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.waits.sleep(for: .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        #expect(clock.waitCount == 0)

        let done = Task { try await clock.waits.sleep(for: .zero) }
        try await done.value
    }

    @Test func aFastSourceAnswersWithinTheLimit() async throws {
        let provider = AnyProvider { (id: String) in "fast \(id)" }.timeout(.seconds(30))

        #expect(try await provider.value(for: "a") == "fast a")
    }
}

@Suite struct RefreshingCachedProviderTests {
    @Test func servesAStaleValueAtOnceAndRefreshesItInTheBackground() async throws {
        let clock = ManualClock()
        let counter = LockedState(0)
        let storage = MemoryStorage<String, TimestampedValue<Int>>()
        let provider = AnyProvider { (_: String) in
            counter.withLock {
                $0 += 1
                return $0
            }
        }
        .cache(storage, refreshingAfter: .seconds(60), clock: clock)

        let first = try await provider.value(for: "a")
        let fresh = try await provider.value(for: "a")
        clock.advance(by: .seconds(61))
        let stale = try await provider.value(for: "a")
        await provider.waitForRefreshes()
        let refreshed = try await provider.value(for: "a")

        #expect(first == 1)
        #expect(fresh == 1)
        #expect(stale == 1)
        #expect(refreshed == 2)
        #expect(counter.withLock { $0 } == 2)
    }

    @Test func aFailedRefreshKeepsTheOldValueAndIsReported() async throws {
        let clock = ManualClock()
        let probe = SourceProbe()
        let reports = LockedState<[StorageError]>([])
        let storage = MemoryStorage<String, TimestampedValue<String>>()
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(storage, refreshingAfter: .seconds(10), clock: clock) { error in
                reports.withLock { $0.append(error) }
            }

        _ = try await provider.value(for: "a")
        probe.fail(next: 1)
        clock.advance(by: .seconds(11))
        let stale = try await provider.value(for: "a")
        await provider.waitForRefreshes()

        #expect(stale == "value of a")
        #expect(storage.value(forKey: "a")?.value == "value of a")
        #expect(reports.withLock { $0.map(\.code) } == [.sourceFailed])
    }

    @Test(.timeLimit(.minutes(1)))
    func aRefreshThatNeverAnswersIsGivenUpAtItsLimitAndLaterRefreshesRun() async throws {
        let clock = ManualClock()
        let probe = SourceProbe(held: true)  // a source that never answers, and ignores cancellation
        let reports = LockedState<[StorageError]>([])
        let storage = MemoryStorage<String, TimestampedValue<String>>()
        storage.set(TimestampedValue(value: "stored", fetched: clock.now()), forKey: "a")
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(storage, refreshingAfter: .seconds(10), refreshTimeLimit: .milliseconds(200), clock: clock) {
                error in reports.withLock { $0.append(error) }
            }
        clock.advance(by: .seconds(11))

        let stale = try await provider.value(for: "a")
        await provider.waitForRefreshes()  // returns only because the refresh was given up
        // Read now: the second refresh, held too, is given up in its turn 200 ms after it starts.
        let reportedAfterFirst = reports.withLock { $0.map(\.code) }
        let staleAgain = try await provider.value(for: "a")
        await probe.waitForCalls(2)

        #expect(stale == "stored")
        #expect(staleAgain == "stored")
        #expect(reportedAfterFirst == [.timedOut])
        #expect(probe.calls == 2, "the stuck refresh did not block the next one")
        probe.open()
        await provider.waitForRefreshes()
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingRefreshesGivesThemUpKeepsTheValueAndReportsNothing() async throws {
        let clock = ManualClock()
        let probe = SourceProbe(held: true)
        let reports = LockedState<[StorageError]>([])
        let storage = MemoryStorage<String, TimestampedValue<String>>()
        storage.set(TimestampedValue(value: "stored", fetched: clock.now()), forKey: "a")
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }
            .cache(storage, refreshingAfter: .seconds(10), refreshTimeLimit: .seconds(3600), clock: clock) {
                error in reports.withLock { $0.append(error) }
            }
        clock.advance(by: .seconds(11))
        _ = try await provider.value(for: "a")
        await probe.waitForCalls(1)

        provider.cancelRefreshes()
        await provider.waitForRefreshes()

        #expect(reports.withLock { $0.isEmpty })
        #expect(storage.value(forKey: "a")?.value == "stored")
        _ = try await provider.value(for: "a")
        await probe.waitForCalls(2)
        probe.open()
        await provider.waitForRefreshes()
    }
}

@Suite struct WeakObjectCacheTests {
    @Test func anObjectStaysReadableOnlyWhileSomethingElseHoldsIt() {
        let cache = WeakObjectCache<String, Avatar>()
        var avatar: Avatar? = Avatar(name: "ada")

        cache.set(avatar!, forKey: "ada")
        let whileHeld = cache.value(forKey: "ada")?.name
        avatar = nil

        #expect(whileHeld == "ada")
        #expect(cache.value(forKey: "ada") == nil)
        #expect(cache.count == 0)
    }

    @Test func aWeakCacheInFrontOfAProviderReturnsTheObjectInUse() async throws {
        let counter = LockedState(0)
        let weak = WeakObjectCache<String, Avatar>()
        let provider = AnyProvider { (id: String) in
            counter.withLock { $0 += 1 }
            return Avatar(name: id)
        }
        .cache(weak)
        .coordinated()

        let held = try await provider.value(for: "ada")
        let again = try await provider.value(for: "ada")

        #expect(held === again)
        #expect(counter.withLock { $0 } == 1)
    }
}
