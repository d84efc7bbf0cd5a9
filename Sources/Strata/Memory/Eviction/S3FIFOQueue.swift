import _StrataInternals

/// S3-FIFO eviction (Yang et al., SOSP 2023): a small FIFO filters one-hit wonders, a main FIFO
/// with a 2-bit frequency keeps the rest, and a ghost queue of recently evicted keys lets a key
/// that returns soon skip the small FIFO.
///
/// New entries enter the small FIFO (10% of the capacity) unless their hash is in the ghost queue,
/// in which case they enter main. When the cache evicts and the small FIFO holds its share, the
/// small FIFO's oldest entry moves to main if it was read since insertion, or else is evicted and
/// its hash remembered in the ghost queue (as many hashes as main holds entries). Otherwise main's
/// oldest entry is evicted if it has not been read since it was last considered, or reinserted
/// with its frequency decremented. A read only increments a 2-bit counter: no list moves on a hit.
final class S3FIFOQueue: EvictionQueue {
    private enum Region: UInt8 {
        case none, small, main
    }

    /// The capacity given by the cache, or `Int.max` when it has only a cost limit.
    private let capacity: Int
    @exclusivity(unchecked) private var links = SlotLinks()
    @exclusivity(unchecked) private var hashes: [Int] = []
    /// Reads since insertion or since main last passed over the entry, up to 3.
    @exclusivity(unchecked) private var frequencies: [UInt8] = []
    @exclusivity(unchecked) private var regions: [Region] = []
    @exclusivity(unchecked) private var small = SlotLinks.List()
    @exclusivity(unchecked) private var main = SlotLinks.List()
    @exclusivity(unchecked) private var ghost: GhostQueue
    /// The slot `victim()` last returned, so its removal can be told from an explicit one.
    @exclusivity(unchecked) private var lastVictim = -1
    /// The slot inserted last, not counted when deciding which FIFO evicts (the paper evicts
    /// before inserting; the cache inserts first).
    @exclusivity(unchecked) private var newest = -1

    init(capacity: Int) {
        self.capacity = capacity
        ghost = GhostQueue(capacity: Self.mainShare(of: FrequencySketch.initialCapacity(forLimit: capacity)))
    }

    var reservedByteCount: Int { ghost.byteCount }

    private static func smallShare(of reference: Int) -> Int {
        max(1, reference / 10)
    }

    private static func mainShare(of reference: Int) -> Int {
        max(reference - smallShare(of: reference), 1)
    }

    /// The number of entries the FIFOs are sized against.
    private var reference: Int {
        capacity == .max ? max(small.count + main.count, 1) : capacity
    }

    func recordInsertion(of slot: Int, hash: Int) {
        if slot >= hashes.count {
            links.ensureCapacity(for: slot)
            while hashes.count <= slot {
                hashes.append(0)
                frequencies.append(0)
                regions.append(.none)
            }
            // The ghost grows with the entries (nothing is evicted into it before the cache is
            // full), to the main FIFO's share of the count limit.
            if capacity == .max, Self.mainShare(of: hashes.count) > ghost.capacity * 2 {
                ghost = GhostQueue(capacity: Self.mainShare(of: hashes.count))
            } else if capacity != .max, ghost.capacity < Self.mainShare(of: capacity), hashes.count * 2 > ghost.capacity
            {
                ghost = GhostQueue(capacity: min(Self.mainShare(of: capacity), Self.mainShare(of: hashes.count * 4)))
            }
        }
        hashes[slot] = hash
        frequencies[slot] = 0
        if ghost.remove(FrequencySketch.mix(hash)) {
            links.pushHead(slot, onto: &main)
            regions[slot] = .main
        } else {
            links.pushHead(slot, onto: &small)
            regions[slot] = .small
        }
        newest = slot
    }

    func recordAccess(of slot: Int, hash: Int) {
        if frequencies[slot] < 3 { frequencies[slot] += 1 }
    }

    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>) {
        frequencies.withUnsafeBufferPointer { frequencies in
            for access in accesses where access.slot >= 0 && access.slot < frequencies.count {
                Strata.prefetch(frequencies.baseAddress! + access.slot)
            }
        }
    }

    func recordRemoval(of slot: Int) {
        switch regions[slot] {
        case .small:
            links.unlink(slot, from: &small)
            if slot == lastVictim { ghost.insert(FrequencySketch.mix(hashes[slot])) }
        case .main:
            links.unlink(slot, from: &main)
        case .none:
            break
        }
        regions[slot] = .none
        if slot == lastVictim { lastVictim = -1 }
        if slot == newest { newest = -1 }
    }

    func victim() -> Int? {
        let smallHeld = small.count - (newest >= 0 && regions[newest] == .small ? 1 : 0)
        lastVictim = smallHeld >= Self.smallShare(of: reference) || main.isEmpty ? evictFromSmall() : evictFromMain()
        return lastVictim >= 0 ? lastVictim : nil
    }

    /// Moves the small FIFO's oldest entries that were read to main until one was not, and returns
    /// it; falls back to main when the small FIFO runs out.
    private func evictFromSmall() -> Int {
        while small.tail >= 0 {
            let oldest = small.tail
            if frequencies[oldest] == 0 {
                return oldest
            }
            links.unlink(oldest, from: &small)
            links.pushHead(oldest, onto: &main)
            regions[oldest] = .main
        }
        return evictFromMain()
    }

    /// Reinserts main's oldest entries that were read, decrementing their frequency, until one was
    /// not, and returns it.
    private func evictFromMain() -> Int {
        while main.tail >= 0 {
            let oldest = main.tail
            if frequencies[oldest] == 0 {
                return oldest
            }
            frequencies[oldest] -= 1
            links.moveToHead(oldest, in: &main)
        }
        return small.tail
    }

    func removeAll() {
        links.removeAll()
        hashes.removeAll(keepingCapacity: true)
        frequencies.removeAll(keepingCapacity: true)
        regions.removeAll(keepingCapacity: true)
        small = SlotLinks.List()
        main = SlotLinks.List()
        ghost.removeAll()
        lastVictim = -1
        newest = -1
    }
}
