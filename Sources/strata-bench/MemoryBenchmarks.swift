import Foundation
import Strata

/// The figures for ``MemoryStorage``, each against ``MutexDictionary`` (the floor), and the same
/// operations on Foundation's `NSCache` as `memory.*.nscache`.
///
/// A later figure for an eviction policy is one more entry here, such as
/// `memory.get.hit.<policy>` built like ``memoryGetHit``.
extension Benchmark {
    /// Operations per round of a `MemoryStorage` figure. With 100,000 random keys most operations
    /// miss the processor's caches (a hundred nanoseconds to a few microseconds each on a shared
    /// machine), so a round takes tens to hundreds of milliseconds and the default run stays under
    /// a minute.
    static let memoryOperations = 200_000
    /// Operations per round of an `NSCache` figure, several times slower per operation.
    static let cacheOperations = 80_000
    /// The count limit of the evicting figures.
    static let evictingCount = 10_000

    static var memory: [Benchmark] {
        [
            memoryGetHit, memoryGetHitNSCache, memoryGetMiss, memoryGetMissNSCache, memorySet, memorySetNSCache,
            memorySetEvicting, memorySetEvictingNSCache, memorySetExpiring, memoryMappedGetHit, memoryErasedGetHit,
            memoryHotGetHit,
            memoryGetHitIdle, memoryGetHitPressure, memorySetPressure,
        ]
    }

    /// A storage of the standard data set that listens to the platform's memory pressure
    /// (`.trimming()` from ``MemoryPressureSource/system``), and the same one that ignores it.
    private static func pressurePair(
        _ data: DataSet
    ) throws -> (listening: MemoryStorage<String, Data>, ignoring: MemoryStorage<String, Data>) {
        let listening = MemoryStorage<String, Data>(memoryPressure: .trimming())
        let ignoring = MemoryStorage<String, Data>(memoryPressure: .ignored)
        for (key, value) in zip(data.keys, data.values) {
            listening.set(value, forKey: key)
            ignoring.set(value, forKey: key)
        }
        return (listening, ignoring)
    }

    /// The reads of `memory.get.hit` from a storage that listens to memory pressure; the same
    /// reads from one that does not run in the same rounds as the reference. Listening costs
    /// nothing on the read path: the platform's signal arrives on a thread of its own.
    static var memoryGetHitPressure: Benchmark {
        Benchmark(name: "memory.get.hit.pressure", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let (listening, ignoring) = try pressurePair(data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: listening) },
                baseline: { readAll(probes, from: dictionary) },
                reference: ("memory.get.hit", { readAll(probes, from: ignoring) })
            )
        }
    }

    /// The sets of `memory.set` on a storage that listens to memory pressure, against the same
    /// sets on one that does not.
    static var memorySetPressure: Benchmark {
        Benchmark(name: "memory.set.pressure", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let (listening, ignoring) = try pressurePair(data)
            let dictionary = MutexDictionary.filled(with: data)
            let indices = data.randomIndices(memoryOperations)
            let keys = indices.map { data.keys[$0] }
            let values = indices.map { data.values[($0 + 1) % data.count] }
            return Workloads(
                operations: keys.count,
                subject: { writeAll(keys, values, to: listening) },
                baseline: { writeAll(keys, values, to: dictionary) },
                reference: ("memory.set", { writeAll(keys, values, to: ignoring) })
            )
        }
    }

    /// Reads of present keys in a random order from an unbounded storage of the standard data set.
    static var memoryGetHit: Benchmark {
        memoryGetHit(named: "memory.get.hit", countsAllocations: true) { _ in MemoryStorage() }
    }

    /// `operations` reads of present keys in a random order from the storage `makeStorage`
    /// returns, filled with the standard data set: the figures of `memory.get.hit`'s shape.
    static func memoryGetHit(
        named name: String,
        countsAllocations: Bool = false,
        operations: Int = memoryOperations,
        storage makeStorage: @escaping (DataSet) -> MemoryStorage<String, Data>
    ) -> Benchmark {
        Benchmark(name: name, baseline: MutexDictionary.name, countsAllocations: countsAllocations) {
            let data = DataSet.standard
            let storage = makeStorage(data)
            storage.fill(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(operations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: storage) },
                baseline: { readAll(probes, from: dictionary) }
            )
        }
    }

    /// The reads of `memory.get.hit` from a storage whose values expire after an hour without a
    /// use (`Expiry.afterAccess`): each hit reads the clock and renews the entry's lifetime. The
    /// same reads from a storage without lifetimes run in the same rounds as the reference.
    static var memoryGetHitIdle: Benchmark {
        Benchmark(name: "memory.get.hit.idle", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let idle = MemoryStorage<String, Data>(expiry: .afterAccess(.seconds(3600)))
            idle.fill(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: idle) },
                baseline: { readAll(probes, from: dictionary) },
                reference: ("memory.get.hit", { readAll(probes, from: storage) })
            )
        }
    }

    /// The reads of `memory.get.hit` over 1,000 keys, which fit the processor's caches: with
    /// memory latency out of the way, what remains is the cost of the code path itself.
    static var memoryHotGetHit: Benchmark {
        Benchmark(name: "memory.hot.get.hit", baseline: MutexDictionary.name) {
            let data = DataSet.small
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations * 4).map { data.keys[$0] }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: storage) },
                baseline: { readAll(probes, from: dictionary) }
            )
        }
    }

    static var memoryGetHitNSCache: Benchmark {
        Benchmark(name: "memory.get.hit.nscache", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let cache = NSCache<NSString, NSData>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let indices = data.randomIndices(cacheOperations)
            let keys = indices.map { data.keys[$0] }
            // Probe with other `NSString` objects than the cache holds, as a caller would.
            let cacheKeys = data.keys.map { NSString(string: $0) }
            let cacheProbes = indices.map { cacheKeys[$0] }
            return Workloads(
                operations: indices.count,
                subject: { readAll(cacheProbes, from: cache) },
                baseline: { readAll(keys, from: dictionary) }
            )
        }
    }

    /// Reads of absent keys from an unbounded storage of the standard data set.
    static var memoryGetMiss: Benchmark {
        Benchmark(name: "memory.get.miss", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.missingKey($0) }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: storage) },
                baseline: { readAll(probes, from: dictionary) }
            )
        }
    }

    static var memoryGetMissNSCache: Benchmark {
        Benchmark(name: "memory.get.miss.nscache", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let cache = NSCache<NSString, NSData>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let missing = data.randomIndices(cacheOperations).map { data.missingKey($0) }
            let probes = missing.map { NSString(string: $0) }
            return Workloads(
                operations: probes.count,
                subject: { readAll(probes, from: cache) },
                baseline: { readAll(missing, from: dictionary) }
            )
        }
    }

    /// Overwrites of present keys, in a random order, with another of the data set's values.
    static var memorySet: Benchmark {
        Benchmark(name: "memory.set", baseline: MutexDictionary.name, countsAllocations: true) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let indices = data.randomIndices(memoryOperations)
            let keys = indices.map { data.keys[$0] }
            let values = indices.map { data.values[($0 + 1) % data.count] }
            return Workloads(
                operations: keys.count,
                subject: { writeAll(keys, values, to: storage) },
                baseline: { writeAll(keys, values, to: dictionary) }
            )
        }
    }

    static var memorySetNSCache: Benchmark {
        Benchmark(name: "memory.set.nscache", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let cache = NSCache<NSString, NSData>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let indices = data.randomIndices(cacheOperations)
            let keys = indices.map { data.keys[$0] }
            let values = indices.map { data.values[($0 + 1) % data.count] }
            let cacheKeys = data.keys.map { NSString(string: $0) }
            let cacheValues = data.values.map { $0 as NSData }
            let cacheProbes = indices.map { (key: cacheKeys[$0], value: cacheValues[($0 + 1) % data.count]) }
            return Workloads(
                operations: indices.count,
                subject: { writeAll(cacheProbes, to: cache) },
                baseline: { writeAll(keys, values, to: dictionary) }
            )
        }
    }

    /// Sets of 100,000 distinct keys in turn into a storage limited to 10,000 entries, so that
    /// every set evicts the least recently used entry. The baseline, still named
    /// `mutex-dictionary`, is ``EvictingMutexDictionary``: it evicts the oldest inserted key.
    static var memorySetEvicting: Benchmark {
        memorySetEvicting(policy: .default, named: "memory.set.evicting", operations: memoryOperations)
    }

    /// The sets of `memory.set.evicting`, each with an hour to live, so that every new entry also
    /// sweeps two others for expired ones (none has expired: this is the sweep's cost). The same
    /// sets into a storage without lifetimes run in the same rounds as the reference.
    static var memorySetExpiring: Benchmark {
        memorySetEvicting(
            policy: .default,
            named: "memory.set.expiring",
            operations: memoryOperations,
            timeToLive: .seconds(3600)
        )
    }

    static var memorySetEvictingNSCache: Benchmark {
        Benchmark(name: "memory.set.evicting.nscache", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let cache = NSCache<NSString, NSData>()
            cache.countLimit = evictingCount
            let dictionary = EvictingMutexDictionary(maximumCount: evictingCount)
            let keys = (0..<cacheOperations).map { data.keys[$0 % data.count] }
            let values = (0..<cacheOperations).map { data.values[$0 % data.count] }
            let cacheKeys = data.keys.map { NSString(string: $0) }
            let cacheValues = data.values.map { $0 as NSData }
            let cacheProbes = (0..<cacheOperations).map {
                (key: cacheKeys[$0 % data.count], value: cacheValues[$0 % data.count])
            }
            return Workloads(
                operations: cacheOperations,
                subject: { writeAll(cacheProbes, to: cache) },
                baseline: { writeAll(keys, values, to: dictionary) }
            )
        }
    }

    /// The reads of `memory.get.hit` through three combinators and the async protocol: keys
    /// mapped string to string, values mapped both ways, then each value mapped to its byte count.
    /// The same storage read directly (synchronously, as `memory.get.hit` does) runs in the same
    /// rounds as the reference.
    static var memoryMappedGetHit: Benchmark {
        Benchmark(name: "memory.mapped.get.hit", baseline: MutexDictionary.name) {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let dictionary = MutexDictionary.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.keys[$0] }
            let mapped =
                storage
                .mapKeys { (key: String) in key }
                .mapValues(reading: { $0 }, writing: { $0 })
                .mapValues { (value: Data) in value.count }
            return Workloads(
                operations: probes.count,
                subject: { try await readAll(probes, from: mapped) },
                baseline: { readAll(probes, from: dictionary) },
                reference: ("memory.get.hit", { readAll(probes, from: storage) })
            )
        }
    }

    /// Reads of `memory.mapped.get.hit`'s keys through a chain of the same storage with its keys
    /// and values mapped, kept as an `AnyStorage`, against the chain itself in the same rounds:
    /// what erasing a chain's type adds to a hit.
    static var memoryErasedGetHit: Benchmark {
        Benchmark(name: "memory.erased.get.hit", baseline: "the-chain") {
            let data = DataSet.standard
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let probes = data.randomIndices(memoryOperations).map { data.keys[$0] }
            let chain =
                storage
                .mapKeys { (key: String) in key }
                .mapValues(reading: { $0 }, writing: { $0 })
            let erased = AnyStorage(chain)
            return Workloads(
                operations: probes.count,
                subject: { try await readAll(probes, from: erased) },
                baseline: { try await readAll(probes, from: chain) }
            )
        }
    }
}

// MARK: Read loops

// Each loop folds what it reads into one integer for the black hole.

func readAll(_ keys: [String], from storage: MemoryStorage<String, Data>) {
    var sum = 0
    for key in keys {
        sum &+= storage.value(forKey: key)?.count ?? -1
    }
    blackHole(sum)
}

func readAll(_ keys: [String], from dictionary: MutexDictionary) {
    var sum = 0
    for key in keys {
        sum &+= dictionary.value(forKey: key)?.count ?? -1
    }
    blackHole(sum)
}

func readAll(_ keys: [NSString], from cache: NSCache<NSString, NSData>) {
    var sum = 0
    for key in keys {
        sum &+= cache.object(forKey: key)?.length ?? -1
    }
    blackHole(sum)
}

// `@concurrent`, so the loop runs on the global executor as a server task would. A caller that is
// `nonisolated(nonsending)` (the default under NonisolatedNonsendingByDefault) hops back to its
// executor after every `await`, about 25 ns here even when nothing suspends: the loop's cost, not
// the storage's.
@concurrent
func readAll(
    _ keys: [String],
    from storage: some ReadableStorage<String, Data>
) async throws(StorageError) {
    var sum = 0
    for key in keys {
        sum &+= try await storage.value(forKey: key)?.count ?? -1
    }
    blackHole(sum)
}

@concurrent
func readAll(
    _ keys: [String],
    from storage: some ReadableStorage<String, Int>
) async throws(StorageError) {
    var sum = 0
    for key in keys {
        sum &+= try await storage.value(forKey: key) ?? -1
    }
    blackHole(sum)
}

// MARK: Write loops

func writeAll(_ keys: [String], _ values: [Data], to storage: MemoryStorage<String, Data>) {
    for (key, value) in zip(keys, values) {
        storage.set(value, forKey: key)
    }
}

func writeAll(_ keys: [String], _ values: [Data], to dictionary: MutexDictionary) {
    for (key, value) in zip(keys, values) {
        dictionary.set(value, forKey: key)
    }
}

func writeAll(_ keys: [String], _ values: [Data], to dictionary: EvictingMutexDictionary) {
    for (key, value) in zip(keys, values) {
        dictionary.set(value, forKey: key)
    }
}

func writeAll(_ probes: [(key: NSString, value: NSData)], to cache: NSCache<NSString, NSData>) {
    for (key, value) in probes {
        cache.setObject(value, forKey: key)
    }
}

// MARK: Filling

extension MemoryStorage<String, Data> {
    /// An unbounded storage holding every key and value of `data`.
    static func filled(with data: DataSet) -> MemoryStorage<String, Data> {
        let storage = MemoryStorage()
        storage.fill(with: data)
        return storage
    }

    /// Sets every key and value of `data`, one by one, in the data set's order.
    func fill(with data: DataSet) {
        writeAll(data.keys, data.values, to: self)
    }
}

extension MutexDictionary {
    static let name = "mutex-dictionary"

    /// A dictionary holding every key and value of `data`, inserted one by one as the storage's
    /// are, so both grow to the same capacity.
    static func filled(with data: DataSet) -> MutexDictionary {
        let dictionary = MutexDictionary()
        writeAll(data.keys, data.values, to: dictionary)
        return dictionary
    }
}

extension NSCache<NSString, NSData> {
    /// An unlimited cache holding every key and value of `data`.
    static func filled(with data: DataSet) -> NSCache<NSString, NSData> {
        let cache = NSCache<NSString, NSData>()
        for (key, value) in zip(data.keys, data.values) {
            cache.setObject(value as NSData, forKey: key as NSString)
        }
        return cache
    }
}

// MARK: Goals

extension Goal {
    /// What `MemoryStorage` aims for, from the issue that asked for this bench.
    static var memory: [Goal] {
        [
            .ratio(of: "memory.get.hit", atMost: 1.5),
            Goal(description: "memory.get.hit allocates nothing") { results in
                results["memory.get.hit"]?.allocationsPerOperation.map {
                    ($0 < 0.0005, "\(format($0, 3)) allocations per hit")
                }
            },
            // Each side against its own floor, measured in its own rounds: the two figures run at
            // different times, and a ratio of their nanoseconds would carry the machine's drift
            // between them.
            Goal(description: "memory.get.hit at least 3x faster than NSCache") { results in
                guard let strata = results["memory.get.hit"], let cache = results["memory.get.hit.nscache"] else {
                    return nil
                }
                let speedup = cache.ratio / strata.ratio
                return (
                    speedup >= 3,
                    "\(format(speedup, 1))x (NSCache \(format(cache.ratio, 2))x its floor, Strata \(format(strata.ratio, 2))x)"
                )
            },
            .ratio(of: "memory.set.evicting", atMost: 2.5),
            .atMost(1.3, timesItsReference: "memory.set.expiring", named: "memory.set.evicting"),
            .atMost(1.3, timesItsReference: "memory.get.hit.idle", named: "memory.get.hit"),
            .atMost(1.1, timesItsReference: "memory.get.hit.pressure", named: "memory.get.hit"),
            .atMost(1.1, timesItsReference: "memory.set.pressure", named: "memory.set"),
            .ratio(of: "memory.erased.get.hit", atMost: 1.1),
            Goal(description: "memory.mapped.get.hit at most 15 ns over memory.get.hit") { results in
                results["memory.mapped.get.hit"]?.differenceFromReference.map {
                    ($0 <= 15, "\(format($0, 1)) ns")
                }
            },
        ]
    }
}

extension Goal {
    /// `figure` takes at most `limit` times the time of its reference, `reference`, measured in
    /// the same rounds.
    static func atMost(_ limit: Double, timesItsReference figure: String, named reference: String) -> Goal {
        Goal(description: "\(figure) at most \(format(limit, 1))x \(reference)") { results in
            guard let result = results[figure], let measured = result.reference else { return nil }
            let ratio = result.nanosecondsPerOperation / measured.nanosecondsPerOperation
            return (
                ratio <= limit,
                "\(format(ratio, 2))x (\(format(result.nanosecondsPerOperation, 1)) ns against \(format(measured.nanosecondsPerOperation, 1)) ns)"
            )
        }
    }
}
