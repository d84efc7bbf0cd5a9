import Foundation
import Strata
import StrataTestSupport
import Testing
import _StrataInternals

/// Many tasks hammering the same storages with random operations; CI runs this suite alone under
/// ThreadSanitizer (`swift test --sanitize=thread --filter StressTests`).
///
/// Each task draws from its own seeded generator, so the operations (though not their
/// interleaving) repeat from run to run.
@Suite(.tags(.stress), .onTestThreads) struct StressTests {
    private static let taskCount = 4
    private static let operationsPerTask = 25_000
    private static let keySpace = 256
    private static let maximumCount = 64
    private static let maximumCost = 4_096

    private enum Operation {
        case read, write, remove, update

        static func random(using generator: inout SeededRandomNumberGenerator) -> Operation {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<4: .read
            case 4..<7: .write
            case 7: .remove
            default: .update
            }
        }
    }

    /// A value of a random size; now and then one larger than the whole cost limit.
    private static func randomValue(using generator: inout SeededRandomNumberGenerator) -> Data {
        let isOversize = Int.random(in: 0..<100, using: &generator) == 0
        let size = isOversize ? maximumCost + 1 : Int.random(in: 0...200, using: &generator)
        return Data(repeating: UInt8(truncatingIfNeeded: size), count: size)
    }

    /// The first limit a storage breaks, or `nil` while it keeps them.
    private static func brokenLimit(of storage: MemoryStorage<Int, Data>, name: String) -> String? {
        let statistics = storage.statistics
        if statistics.count > storage.maximumCount {
            return "\(name) holds \(statistics.count) entries, more than \(storage.maximumCount)"
        }
        if statistics.totalCost > storage.maximumCost || statistics.totalCost < 0 {
            return "\(name) costs \(statistics.totalCost), outside 0...\(storage.maximumCost)"
        }
        return nil
    }

    /// Whether the storage's entries add up to its count and total cost. Call it when no task is
    /// using the storage.
    private static func isConsistent(_ storage: MemoryStorage<Int, Data>) -> Bool {
        let keys = storage.keys()
        let cost = keys.reduce(0) { $0 + (storage.value(forKey: $1)?.count ?? 0) }
        return keys.count == storage.count && cost == storage.totalCost
    }

    @Test(arguments: EvictionPolicy.all)
    func mixedOperationsKeepMemoryStorageWithinItsLimits(policy: EvictionPolicy) async throws {
        let cache = MemoryStorage<Int, Data>(
            maximumCount: Self.maximumCount,
            maximumCost: Self.maximumCost,
            evictionPolicy: policy
        )

        let problems = await withTaskGroup(of: String?.self) { group in
            for task in 0..<Self.taskCount {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(task))
                    for iteration in 0..<Self.operationsPerTask {
                        // Yields now and then, so a stress loop never holds a cooperative-pool thread for long.
                        if iteration % 64 == 0 { await Task.yield() }
                        let key = Int.random(in: 0..<Self.keySpace, using: &generator)
                        let value = Self.randomValue(using: &generator)
                        switch Operation.random(using: &generator) {
                        case .read: _ = cache.value(forKey: key)
                        case .write: cache.set(value, forKey: key)
                        case .remove: cache.removeValue(forKey: key)
                        case .update: _ = try? cache.update(forKey: key) { $0 = $0 == nil ? value : nil }
                        }
                        if let problem = Self.brokenLimit(of: cache, name: "the cache") {
                            return problem
                        }
                    }
                    return nil
                }
            }
            return await group.reduce(into: [String]()) { problems, problem in
                if let problem { problems.append(problem) }
            }
        }

        #expect(problems.isEmpty)
        #expect(Self.isConsistent(cache))
        #expect(cache.statistics.evictions > 0)
        #expect(cache.statistics.rejections > 0)
    }

    /// Lifetimes worked out per entry under load: an idle time that reads renew in their shard,
    /// and rules for creates, replacements and reads that run outside the locks, while the clock
    /// moves on.
    @Test(arguments: [
        Expiry<Int, Data>.afterAccess(.milliseconds(40)),
        Expiry<Int, Data>(
            afterCreate: { _, value in .remaining(.milliseconds(10 + value.count % 50)) },
            afterUpdate: { _, _, current in current },
            afterRead: { _, _, _ in .remaining(.milliseconds(30)) }
        ),
    ])
    func mixedOperationsWithLifetimeRulesKeepTheLimitsAndTheBooks(expiry: Expiry<Int, Data>) async throws {
        let clock = ManualClock()
        let cache = MemoryStorage<Int, Data>(
            maximumCount: Self.maximumCount,
            maximumCost: Self.maximumCost,
            expiry: expiry,
            clock: clock
        )

        let problems = await withTaskGroup(of: String?.self) { group in
            for task in 0..<Self.taskCount {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(200 + task))
                    for iteration in 0..<Self.operationsPerTask {
                        // Yields now and then, so a stress loop never holds a cooperative-pool thread for long.
                        if iteration % 64 == 0 { await Task.yield() }
                        if iteration % 16 == 0 { clock.advance(by: .milliseconds(1)) }
                        let key = Int.random(in: 0..<Self.keySpace, using: &generator)
                        let value = Self.randomValue(using: &generator)
                        switch Operation.random(using: &generator) {
                        case .read: _ = cache.value(forKey: key)
                        case .write:
                            if iteration % 8 == 0 {
                                do {
                                    try await cache.setValues([(key, value), (key &+ 1, value)])
                                } catch {
                                    return "setValues failed: \(error)"
                                }
                            } else {
                                cache.set(value, forKey: key)
                            }
                        case .remove: cache.removeValue(forKey: key)
                        case .update: _ = try? cache.update(forKey: key) { $0 = $0 == nil ? value : nil }
                        }
                        if let problem = Self.brokenLimit(of: cache, name: "the cache") {
                            return problem
                        }
                    }
                    return nil
                }
            }
            return await group.reduce(into: [String]()) { problems, problem in
                if let problem { problems.append(problem) }
            }
        }

        #expect(problems.isEmpty)
        cache.removeExpired()
        #expect(Self.isConsistent(cache))
        #expect(cache.statistics.expirations > 0)
    }

    @Test func mixedOperationsKeepCombinedLayersWithinTheirLimits() async throws {
        let front = MemoryStorage<Int, Data>(maximumCount: Self.maximumCount / 4, maximumCost: Self.maximumCost / 4)
        let back = MemoryStorage<Int, Data>(maximumCount: Self.maximumCount, maximumCost: Self.maximumCost)
        let combined = front.combined(with: back)

        let problems = await withTaskGroup(of: String?.self) { group in
            for task in 0..<Self.taskCount {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(100 + task))
                    for iteration in 0..<Self.operationsPerTask {
                        // Yields now and then, so a stress loop never holds a cooperative-pool thread for long.
                        if iteration % 64 == 0 { await Task.yield() }
                        let key = Int.random(in: 0..<Self.keySpace, using: &generator)
                        let value = Self.randomValue(using: &generator)
                        do {
                            switch Operation.random(using: &generator) {
                            case .read: _ = try await combined.value(forKey: key)
                            case .write: try await combined.set(value, forKey: key)
                            case .remove: try await combined.removeValue(forKey: key)
                            case .update: try await combined.update(forKey: key) { $0 = $0 == nil ? value : nil }
                            }
                        } catch {
                            return "operation failed: \(error)"
                        }
                        if let problem = Self.brokenLimit(of: front, name: "the front")
                            ?? Self.brokenLimit(of: back, name: "the back")
                        {
                            return problem
                        }
                    }
                    return nil
                }
            }
            return await group.reduce(into: [String]()) { problems, problem in
                if let problem { problems.append(problem) }
            }
        }

        #expect(problems.isEmpty)
        #expect(Self.isConsistent(front))
        #expect(Self.isConsistent(back))
        let stale = front.keys().filter { key in
            guard let inBack = back.value(forKey: key) else { return false }
            return front.value(forKey: key) != inBack
        }
        #expect(stale.isEmpty, "the front holds values the back has replaced")
    }

    @Test func concurrentUpdatesOnFewKeysAreNeverLost() async throws {
        let cache = MemoryStorage<Int, Int>()
        let keys = 0..<4

        let counts = try await withThrowingTaskGroup(of: [Int].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(200 + task))
                    var counts = Array(repeating: 0, count: keys.count)
                    for iteration in 0..<2_500 {
                        // Yields now and then, so a stress loop never holds a cooperative-pool thread for long.
                        if iteration % 64 == 0 { await Task.yield() }
                        let key = Int.random(in: keys, using: &generator)
                        try cache.update(forKey: key) { $0 = ($0 ?? 0) + 1 }
                        counts[key] += 1
                    }
                    return counts
                }
            }
            return try await group.reduce(into: Array(repeating: 0, count: keys.count)) { total, counts in
                for key in keys { total[key] += counts[key] }
            }
        }

        #expect(keys.map { cache.value(forKey: $0) ?? 0 } == counts)
        #expect(counts.reduce(0, +) == 20_000)
    }

    @Test func concurrentUpdatesThroughCombinedLayersAreNeverLost() async throws {
        let combined = MemoryStorage<Int, Int>().combined(with: MemoryStorage<Int, Int>())
        let keys = 0..<4

        let counts = try await withThrowingTaskGroup(of: [Int].self) { group in
            for task in 0..<4 {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(300 + task))
                    var counts = Array(repeating: 0, count: keys.count)
                    for iteration in 0..<1_000 {
                        // Yields now and then, so a stress loop never holds a cooperative-pool thread for long.
                        if iteration % 64 == 0 { await Task.yield() }
                        let key = Int.random(in: keys, using: &generator)
                        if Int.random(in: 0..<4, using: &generator) == 0 {
                            _ = try await combined.value(forKey: key)
                        }
                        try await combined.update(forKey: key, default: 0) { $0 += 1 }
                        counts[key] += 1
                    }
                    return counts
                }
            }
            return try await group.reduce(into: Array(repeating: 0, count: keys.count)) { total, counts in
                for key in keys { total[key] += counts[key] }
            }
        }

        #expect(keys.map { combined.back.value(forKey: $0) ?? 0 } == counts)
        // Two updates of one key that overlapped remove it from the front (it may have reached the
        // layers in two orders), so the front may lack a key, but never holds an older count.
        for key in keys {
            let front = combined.front.value(forKey: key)
            #expect(front == nil || front == counts[key], "the front holds \(front ?? 0) for key \(key)")
        }
        // A read fills the front again, with the back's count.
        var read: [Int?] = []
        for key in keys { read.append(try await combined.value(forKey: key)) }
        #expect(read == counts)
        #expect(keys.map { combined.front.value(forKey: $0) } == counts)
    }

    @Test func concurrentWritesThroughPushingReachBothLayersInOneOrder() async throws {
        let front = YieldingStorage()
        let back = YieldingStorage()
        let pushing = front.pushing(to: back)
        let keys = 0..<8

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    var generator = SeededRandomNumberGenerator(seed: UInt64(400 + task))
                    for iteration in 0..<2_000 {
                        let key = Int.random(in: keys, using: &generator)
                        if Int.random(in: 0..<8, using: &generator) == 0 {
                            try await pushing.removeValue(forKey: key)
                        } else {
                            try await pushing.set(task * 10_000 + iteration, forKey: key)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        // Writes of one key take turns, so each layer saw every key's writes in the same order.
        let landed = (front: front.landed.withLock { $0 }, back: back.landed.withLock { $0 })
        #expect(landed.back.values.reduce(0) { $0 + $1.count } == 8_000)
        for key in keys {
            let (front, back) = (landed.front[key] ?? [], landed.back[key] ?? [])
            let firstDifference =
                zip(front, back).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(front.count, back.count)
            let sameOrder = front == back
            #expect(
                sameOrder,
                "key \(key): \(front.count) and \(back.count) writes, differing from write \(firstDifference) on"
            )
        }
    }
}

/// A layer whose writes suspend a random number of times before and after they land, and that
/// keeps, for each key, the values in the order they landed (`nil` for a removal): writes of one
/// key would overtake each other between two such layers if nothing ordered them.
private final class YieldingStorage: WritableStorage {
    let landed = LockedState([Int: [Int?]]())

    func set(_ value: Int, forKey key: Int) async throws(StorageError) {
        await land(value, forKey: key)
    }

    func removeValue(forKey key: Int) async throws(StorageError) {
        await land(nil, forKey: key)
    }

    private func land(_ value: Int?, forKey key: Int) async {
        for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
        landed.withLock { $0[key, default: []].append(value) }
        for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
    }
}
