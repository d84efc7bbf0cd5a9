import CoreMetrics
import Foundation
import MetricsTestKit
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// A memory storage gives memory back when its source signals pressure: part of what it holds
/// on a warning, everything on a critical event, counted as pressure evictions; a storage without
/// limits, or one that opted out, keeps everything; the platform's signal is armed for real.
@Suite(.onTestThreads) struct MemoryPressureTests {
    private static func filled(
        _ count: Int,
        response: MemoryPressureResponse,
        maximumCount: Int? = 1_000,
        metrics: StorageMetrics? = nil
    ) throws -> MemoryStorage<String, Data> {
        let cache = MemoryStorage<String, Data>(
            maximumCount: maximumCount,
            evictionPolicy: .leastRecentlyUsed,
            metrics: metrics,
            memoryPressure: response
        )
        for index in 0..<count { cache.set(Data(count: 10), forKey: "k\(index)") }
        return cache
    }

    @Test func aWarningKeepsTheShareAskedForInEvictionOrder() throws {
        let source = MemoryPressureSource()
        let cache = try Self.filled(8, response: .trimming(keepingOnWarning: 0.25, from: source))
        // k0 becomes the most recently used: a least-recently-used trim keeps it.
        #expect(cache.value(forKey: "k0") != nil)

        source.signal(.warning)

        #expect(cache.count == 2)
        #expect(cache.totalCost == 20)
        #expect(Set(cache.keys()) == ["k7", "k0"])
        #expect(cache.statistics.pressureEvictions == 6)
        #expect(cache.statistics.evictions == 0)
        #expect(source.eventCount(.warning) == 1)
    }

    @Test func aWarningTrimsByCostAsWellAsByCount() throws {
        let source = MemoryPressureSource()
        let cache = MemoryStorage<String, Data>(
            maximumCost: 1_000,
            evictionPolicy: .leastRecentlyUsed,
            memoryPressure: .trimming(keepingOnWarning: 0.5, from: source)
        )
        // One large value and three small ones: half the cost is reached only when the large one,
        // the oldest, goes; half the count needs one more.
        cache.set(Data(count: 100), forKey: "large")
        for key in ["a", "b", "c"] { cache.set(Data(count: 10), forKey: key) }

        source.signal(.warning)

        #expect(Set(cache.keys()) == ["b", "c"])
        #expect(cache.totalCost == 20)
        #expect(cache.statistics.pressureEvictions == 2)
    }

    @Test func aCriticalEventEmptiesTheStorageAndTellsWhy() async throws {
        let source = MemoryPressureSource()
        let cache = MemoryStorage<String, Int>(
            maximumCount: 100,
            evictionPolicy: .leastRecentlyUsed,
            memoryPressure: .trimming(keepingOnWarning: 0.9, from: source)
        )
        let stream = cache.removals()
        for index in 0..<3 { cache.set(index, forKey: "k\(index)") }

        source.signal(.critical)

        #expect(cache.count == 0)
        #expect(cache.statistics.pressureEvictions == 3)
        let removals = await RemovalTests.first(3, of: stream)
        #expect(
            RemovalTests.summary(removals) == [
                "k0=0 evictedForMemoryPressure", "k1=1 evictedForMemoryPressure", "k2=2 evictedForMemoryPressure",
            ]
        )
        // The storage still works after it.
        cache.set(7, forKey: "after")
        #expect(cache.value(forKey: "after") == 7)
    }

    @Test func aStorageWithoutLimitsKeepsItsValuesUnlessItAsks() throws {
        let source = MemoryPressureSource()
        let automatic = MemoryPressureResponse(source: source, keptOnWarning: 0.5, includesUnbounded: false)
        let store = try Self.filled(4, response: automatic, maximumCount: nil)
        let bounded = try Self.filled(4, response: automatic)
        let asking = try Self.filled(4, response: .trimming(from: source), maximumCount: nil)

        source.signal(.critical)

        #expect(store.count == 4)
        #expect(store.statistics.pressureEvictions == 0)
        #expect(bounded.count == 0)
        #expect(asking.count == 0)
    }

    @Test func anIgnoringStorageKeepsEverything() throws {
        let cache = try Self.filled(4, response: .ignored)
        cache.relieveMemoryPressure(.warning)
        // Asking by hand still works; the storage only does not listen.
        #expect(cache.count == 4)
        #expect(cache.memoryPressure.source == nil)
        #expect(MemoryPressureResponse.automatic.source === MemoryPressureSource.system)
    }

    @Test func relievingByHandUsesTheStoragesShare() throws {
        let source = MemoryPressureSource()
        let cache = try Self.filled(10, response: .trimming(keepingOnWarning: 0.3, from: source))
        cache.relieveMemoryPressure(.warning)
        #expect(cache.count == 3)
        cache.relieveMemoryPressure(.critical)
        #expect(cache.count == 0)
        #expect(cache.statistics.pressureEvictions == 10)
        #expect(source.eventCount(.warning) == 0)
    }

    /// The words MemoryStorage stops with, for every share it refuses.
    @Test(arguments: [-0.1, 1.5, Double.nan, Double.infinity])
    func aShareOutsideZeroToOneIsNamed(_ share: Double) {
        let response = MemoryPressureResponse.trimming(keepingOnWarning: share, from: MemoryPressureSource())

        #expect(response.configurationProblem == "memoryPressure.keptOnWarning must be from 0 to 1, got \(share)")
    }

    @Test func aShareOutsideZeroToOneStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Int>(
                maximumCount: 10,
                memoryPressure: .trimming(keepingOnWarning: 1.5, from: MemoryPressureSource())
            )
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "MemoryStorage: memoryPressure.keptOnWarning must be from 0 to 1, got 1.5"
        )
    }

    @Test func aReleasedStorageStopsListening() throws {
        let source = MemoryPressureSource()
        weak var released: MemoryStorage<String, Data>?
        do {
            let cache = try Self.filled(4, response: .trimming(from: source))
            released = cache
            #expect(source.listenerCount == 1)
        }
        #expect(released == nil)
        #expect(source.listenerCount == 0)
        source.signal(.critical)
    }

    @Test func pressureEvictionsAreReportedAsAMetric() throws {
        let factory = TestMetrics()
        let metrics = StorageMetrics(prefix: "app.cache", factory: factory)
        let source = MemoryPressureSource()
        let cache = try Self.filled(6, response: .trimming(keepingOnWarning: 0.5, from: source), metrics: metrics)

        source.signal(.warning)

        let counted = factory.counters(label: "app.cache.evictions", dimensions: [("reason", "memory_pressure")])
            .reduce(0) { $0 + $1.totalValue }
        #expect(counted == 3)
        #expect(cache.statistics.figures.contains { $0.name == "evictions{reason=memory_pressure}" && $0.value == 3 })
        #expect(try factory.expectGauge("app.cache.entries").lastValue == 3)
    }

    @Test func aWarningDuringWritesLeavesTheStorageConsistent() async throws {
        let source = MemoryPressureSource()
        let cache = MemoryStorage<Int, Int>(
            maximumCount: 10_000,
            memoryPressure: .trimming(keepingOnWarning: 0.5, from: source)
        )
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    for index in 0..<20_000 { cache.set(index, forKey: writer * 20_000 + index) }
                }
            }
            group.addTask {
                for round in 0..<200 { source.signal(round % 10 == 9 ? .critical : .warning) }
            }
        }
        #expect(cache.count == cache.keys().count)
        #expect(cache.count <= 10_000)
        #expect(cache.statistics.pressureEvictions > 0)
    }

    // MARK: The platform's signal

    @Test func theSystemSourceWatchesThePlatformOnceAStorageListens() async throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 10)
        // The source is the whole process's: a storage of a test running beside this one may have
        // subscribed first and still be arming the platform's monitor, which the status reports
        // as "starting" until the monitor is armed.
        _ = await eventually(within: .seconds(10)) { MemoryPressureSource.system.status != .watching("starting") }
        let status = MemoryPressureSource.system.status
        switch status {
        case .watching(let what):
            #if os(Linux)
            #expect(what.contains("memory.pressure") || what.contains("/proc/pressure/memory"))
            #endif
            #expect(!what.isEmpty && what != "starting")
        case .unavailable(let reason):
            // The kernel refused: the reason names the file and the error.
            #expect(reason.contains("pressure"))
        case .idle, .manual:
            Issue.record("the system source is \(status) with a storage listening")
        }
        cache.set(1, forKey: "a")
    }

    #if os(Linux)
    @Test func theKernelTriggerArmsAndItsWatcherStops() throws {
        let file = MemoryPressureMonitor.linuxPressureFile()
        let monitor: MemoryPressureMonitor
        do {
            monitor = try MemoryPressureMonitor.start(pressureFile: file) { _ in }
        } catch {
            // A kernel without PSI, or one that refuses this process a trigger: the reason says
            // which file and which error, and it is what the system source logs.
            #expect(error.description.contains(file))
            print("The kernel refused a memory-pressure trigger: \(error.description)")
            return
        }
        #expect(monitor.description == "\(file) (warning: \"some 200000 2000000\", critical: \"full 200000 2000000\")")
        // The watcher thread waits in poll(2): stop wakes it and joins it (a watcher that did not
        // wake would hang here), and a second stop does nothing.
        monitor.stop()
        monitor.stop()
    }

    @Test func aMissingPressureFileIsRefusedWithItsName() {
        let missing = "/proc/pressure/no-such-resource"
        let error = #expect(throws: MemoryPressureMonitor.Refusal.self) {
            _ = try MemoryPressureMonitor.start(pressureFile: missing) { _ in }
        }
        #expect(error?.description.contains("cannot open \(missing)") == true)
        #expect(error?.description.contains("errno 2") == true)
    }

    @Test func aTriggerTheKernelRejectsIsRefusedWithTheTrigger() throws {
        // A stall longer than the window is invalid on every kernel with PSI.
        guard FileManager.default.fileExists(atPath: "/proc/pressure/memory") else { return }
        let error = #expect(throws: MemoryPressureMonitor.Refusal.self) {
            _ = try MemoryPressureMonitor.start(pressureFile: "/proc/pressure/memory", warningStall: .seconds(3)) { _ in
            }
        }
        #expect(
            error?.description.contains(
                "the kernel refused the trigger \"some 3000000 2000000\" on /proc/pressure/memory"
            ) == true
        )
        #expect(error?.description.contains("errno 22") == true)
    }
    #endif
}
