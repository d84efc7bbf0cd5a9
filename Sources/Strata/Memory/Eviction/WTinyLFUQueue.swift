import _StrataInternals

/// Window TinyLFU eviction, as in Caffeine: new entries wait in a small LRU window, and an entry
/// leaving the window enters the main region only if the frequency sketch says it is requested more
/// often than the entry main would evict for it.
///
/// The window holds 1% of the capacity; main is a segmented LRU, 20% probation and 80% protected.
/// Frequencies come from a ``FrequencySketch`` of 16 counters per entry with a doorkeeper,
/// halved every 10 × capacity sightings. A candidate is admitted only if its estimate is strictly
/// higher than the victim's.
///
/// Counting: each request counts once. A miss increments the sketch and the insertion that usually
/// follows it for the same key does not (the queue remembers the last missed hash); an insertion
/// of any other key (a write without a read) increments it. Reads and overwrites of a held entry
/// increment it.
final class WTinyLFUQueue: EvictionQueue {
    @exclusivity(unchecked) private var regions: TinyLFURegions
    @exclusivity(unchecked) private var sketch: FrequencySketch
    /// The number of entries the sketch was sized for; it grows with the slots (see
    /// ``FrequencySketch/grownCapacity(_:forSlot:limit:)``).
    @exclusivity(unchecked) private var sketchCapacity: Int
    @exclusivity(unchecked) private var lastMissHash: Int?

    init(capacity: Int, maximumCost: Int = .max) {
        regions = TinyLFURegions(capacity: capacity, maximumCost: maximumCost, windowFraction: 0.01)
        sketchCapacity = FrequencySketch.initialCapacity(forLimit: capacity)
        sketch = Self.makeSketch(capacity: sketchCapacity)
    }

    var reservedByteCount: Int { sketch.byteCount }

    private static func makeSketch(capacity: Int) -> FrequencySketch {
        FrequencySketch(counters: capacity * 16, samplePeriod: capacity * 10, doorkeeperBitsPerSample: 4)
    }

    func recordInsertion(of slot: Int, hash: Int) {
        if let grown = FrequencySketch.grownCapacity(sketchCapacity, forSlot: slot, limit: regions.capacity) {
            sketchCapacity = grown
            var larger = Self.makeSketch(capacity: sketchCapacity)
            larger.takeCounts(of: sketch)
            sketch = larger
        }
        if lastMissHash == hash {
            lastMissHash = nil
        } else {
            sketch.increment(hash)
        }
        regions.insert(slot, hash: hash)
    }

    func recordCost(_ cost: Int, of slot: Int) {
        regions.setCost(cost, of: slot)
    }

    func recordAccess(of slot: Int, hash: Int) {
        sketch.increment(hash)
        regions.access(slot)
    }

    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>) {
        regions.prefetch(accesses, counters: sketch)
    }

    func recordMiss(hash: Int) {
        sketch.increment(hash)
        lastMissHash = hash
    }

    func recordRemoval(of slot: Int) {
        regions.remove(slot)
    }

    func victim() -> Int? {
        let choice = regions.evictionChoice()
        if choice.candidate >= 0 {
            let candidateFrequency = sketch.frequency(of: regions.hashes[choice.candidate])
            let victimFrequency = sketch.frequency(of: regions.hashes[choice.victim])
            return candidateFrequency > victimFrequency ? choice.victim : choice.candidate
        }
        return choice.victim >= 0 ? choice.victim : nil
    }

    func removeAll() {
        regions.removeAll()
        sketch.removeAll()
        lastMissHash = nil
    }
}
