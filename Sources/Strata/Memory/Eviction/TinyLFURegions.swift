import _StrataInternals

/// The entries of a Window TinyLFU queue, in order: an LRU window for new entries and a segmented
/// LRU main region (probation and protected).
///
/// An entry leaving the window enters probation as the *candidate*; the queue that owns the
/// regions decides, when it must evict, whether the candidate or probation's oldest entry (the
/// *victim*) goes. A read in probation promotes an entry to protected; protected's oldest entries
/// drop back to probation when it is over its share. All moves are O(1) and allocate only when a
/// slot index is seen for the first time.
///
/// Under a cost limit the window's and protected's shares are shares of the cost limit too, as in
/// Caffeine: an entry that costs more than the window's share leaves it at once and is judged,
/// rather than waiting there while its cost evicts main's entries unjudged. With a cost limit
/// alone, shares are of the cost limit only.
struct TinyLFURegions {
    enum Region: UInt8 {
        case none, window, probation, protected
    }

    /// The capacity given by the cache, or `Int.max` when it has only a cost limit.
    let capacity: Int
    /// The cost limit given by the cache, or `Int.max` when it has none.
    let maximumCost: Int
    /// The protected segment's share of the main region.
    private let protectedFraction = 0.8
    /// The window's share of the capacity; at least one entry.
    private(set) var windowFraction: Double

    private var links = SlotLinks()
    /// Each slot's key hash, for the frequency sketch.
    private(set) var hashes: [Int] = []
    private var regions: [Region] = []
    private var window = SlotLinks.List()
    private var probation = SlotLinks.List()
    private var protected = SlotLinks.List()
    /// The entry that last left the window and has not been judged yet, or -1.
    private(set) var candidate = -1
    /// Each slot's cost, under a cost limit; empty otherwise.
    private var costs: [Int] = []
    private var windowCost = 0
    private var protectedCost = 0

    init(capacity: Int, maximumCost: Int = .max, windowFraction: Double) {
        self.capacity = capacity
        self.maximumCost = maximumCost
        self.windowFraction = windowFraction
    }

    /// Whether the regions are sized by cost (the cache has a cost limit).
    var weighsCost: Bool { maximumCost != .max }

    /// The cost of the entry in `slot`, under a cost limit; 0 otherwise.
    func cost(of slot: Int) -> Int {
        slot < costs.count ? costs[slot] : 0
    }

    /// Records the cost of `slot`'s entry, before its insertion or when a write changes it.
    mutating func setCost(_ cost: Int, of slot: Int) {
        guard weighsCost else { return }
        while costs.count <= slot { costs.append(0) }
        let change = cost - costs[slot]
        costs[slot] = cost
        guard slot < regions.count else { return }
        switch regions[slot] {
        case .window: windowCost += change
        case .protected: protectedCost += change
        default: break
        }
    }

    /// The number of entries held.
    var count: Int { window.count + probation.count + protected.count }

    /// The number of entries in the window.
    var windowCount: Int { window.count }

    /// The number of entries on probation.
    var probationCount: Int { probation.count }

    /// The number of slot indices seen so far.
    var slotCount: Int { hashes.count }

    /// The number of entries the regions are sized against: the capacity, or the entries held when
    /// there is no count limit.
    var reference: Int {
        capacity == .max ? max(count, 1) : capacity
    }

    /// The most entries the window holds; no limit when the regions are sized by cost alone.
    var windowMaximum: Int {
        capacity == .max && weighsCost ? .max : max(1, Int(Double(reference) * windowFraction))
    }

    private var protectedMaximum: Int {
        capacity == .max && weighsCost ? .max : Int(Double(reference - windowMaximum) * protectedFraction)
    }

    /// The most the window's entries cost together, under a cost limit.
    private var windowMaximumCost: Int {
        // Without a cost limit there is nothing to divide (and a window of the whole cache would
        // overflow `Int`).
        weighsCost ? Int(Double(maximumCost) * windowFraction) : .max
    }

    private var protectedMaximumCost: Int {
        Int(Double(maximumCost - windowMaximumCost) * protectedFraction)
    }

    private var windowIsOver: Bool {
        window.count > windowMaximum || (weighsCost && windowCost > windowMaximumCost && !window.isEmpty)
    }

    private var protectedIsOver: Bool {
        protected.count > protectedMaximum || (weighsCost && protectedCost > protectedMaximumCost && !protected.isEmpty)
    }

    /// Puts a new entry at the head of the window, moving the window's overflow to probation.
    mutating func insert(_ slot: Int, hash: Int) {
        if slot >= hashes.count {
            links.ensureCapacity(for: slot)
            while hashes.count <= slot {
                hashes.append(0)
                regions.append(.none)
            }
        }
        hashes[slot] = hash
        regions[slot] = .window
        links.pushHead(slot, onto: &window)
        windowCost += cost(of: slot)
        moveWindowOverflowToProbation()
    }

    /// Records a use: the entry moves to the head of its region, from probation to protected.
    /// Returns the region the entry was in.
    @discardableResult
    mutating func access(_ slot: Int) -> Region {
        let region = regions[slot]
        switch region {
        case .window:
            links.moveToHead(slot, in: &window)
        case .probation:
            links.unlink(slot, from: &probation)
            links.pushHead(slot, onto: &protected)
            regions[slot] = .protected
            protectedCost += cost(of: slot)
            if candidate == slot { candidate = -1 }
            demoteProtectedOverflow()
        case .protected:
            links.moveToHead(slot, in: &protected)
        case .none:
            break
        }
        return region
    }

    /// Starts loading what ``access(_:)`` of `slot` reads first. A hint: nothing changes.
    func prefetch(_ slot: Int) {
        guard slot >= 0, slot < regions.count else { return }
        regions.withUnsafeBufferPointer { Strata.prefetch($0.baseAddress! + slot) }
        links.prefetch(slot)
    }

    /// Starts loading what recording `accesses` reads, in `counters` and here: every entry's
    /// counters and region first, then, once those are on their way, its neighbours' links.
    /// A hint: nothing changes.
    func prefetch(_ accesses: UnsafeBufferPointer<PendingAccess>, counters: borrowing FrequencySketch) {
        for access in accesses {
            counters.prefetch(access.hash)
            prefetch(access.slot)
        }
        for access in accesses { prefetchNeighbours(of: access.slot) }
    }

    /// Starts loading the links of `slot`'s neighbours, which ``access(_:)`` changes; worth
    /// calling once `slot`'s own links have arrived. A hint: nothing changes.
    func prefetchNeighbours(of slot: Int) {
        links.prefetchNeighbours(of: slot)
    }

    /// Takes an entry out of whichever region holds it.
    mutating func remove(_ slot: Int) {
        switch regions[slot] {
        case .window:
            links.unlink(slot, from: &window)
            windowCost -= cost(of: slot)
        case .probation:
            links.unlink(slot, from: &probation)
        case .protected:
            links.unlink(slot, from: &protected)
            protectedCost -= cost(of: slot)
        case .none:
            break
        }
        regions[slot] = .none
        if candidate == slot { candidate = -1 }
    }

    /// What to evict: the candidate and the victim it competes with when there is a candidate and
    /// a distinct victim; otherwise a single choice in `victim` (`candidate` is -1), the oldest
    /// of probation, protected or the window, in that order; -1 when empty.
    ///
    /// The candidate's victim is main's oldest entry other than itself: probation's, or, when
    /// probation holds only the candidate, protected's (as in Caffeine). Without that fallback a
    /// candidate that found probation empty, as it is after one large entry's arrival has evicted
    /// many small ones under a cost limit, would be evicted without being judged.
    ///
    /// Always inlined: called on regions held in an array (the window trials'), it took a copy of
    /// the regions, retaining each of their arrays, at every eviction.
    @inline(__always)
    func evictionChoice() -> (candidate: Int, victim: Int, victimLeavesWindow: Bool) {
        if candidate >= 0 {
            var victim = probation.tail
            if victim == candidate { victim = links.newer(than: candidate) }
            if victim < 0 { victim = protected.tail }
            return victim < 0 ? (-1, candidate, true) : (candidate, victim, false)
        }
        if probation.tail >= 0 { return (-1, probation.tail, false) }
        if protected.tail >= 0 { return (-1, protected.tail, false) }
        return (-1, window.tail, true)
    }

    /// The victim after `slot` when several must go: the entry just newer than `slot` in its
    /// region, then, after probation's newest, protected's oldest; -1 after protected's newest.
    func victim(after slot: Int) -> Int {
        let newer = links.newer(than: slot)
        return newer < 0 && regions[slot] == .probation ? protected.tail : newer
    }

    /// Moves `slot` to probation's newest end when it is on probation, so that the entry behind it
    /// becomes the next victim; does nothing elsewhere.
    mutating func sendToBackOfProbation(_ slot: Int) {
        guard regions[slot] == .probation else { return }
        links.moveToHead(slot, in: &probation)
    }

    /// Lets the candidate stay on probation as an ordinary entry: the victims after it are
    /// probation's oldest entries, as for any other entry.
    mutating func admitCandidate() {
        candidate = -1
    }

    /// Resizes the window to `fraction` of the capacity, moving entries between the window and
    /// main: a smaller window hands its oldest entries to probation, a larger one takes main's
    /// oldest.
    mutating func setWindowFraction(_ fraction: Double) {
        let previous = windowMaximum
        let previousCost = windowMaximumCost
        windowFraction = fraction
        var growth = windowMaximum == .max ? 0 : windowMaximum - previous
        var costGrowth = weighsCost ? windowMaximumCost - previousCost : 0
        while growth > 0 || costGrowth > 0 {
            var moved = probation.tail
            if moved >= 0 {
                links.unlink(moved, from: &probation)
                if candidate == moved { candidate = -1 }
            } else {
                moved = protected.tail
                guard moved >= 0 else { break }
                links.unlink(moved, from: &protected)
                protectedCost -= cost(of: moved)
            }
            links.pushHead(moved, onto: &window)
            regions[moved] = .window
            windowCost += cost(of: moved)
            growth -= 1
            costGrowth -= max(cost(of: moved), 1)
        }
        moveWindowOverflowToProbation()
        demoteProtectedOverflow()
    }

    private mutating func moveWindowOverflowToProbation() {
        while windowIsOver {
            let oldest = window.tail
            links.unlink(oldest, from: &window)
            windowCost -= cost(of: oldest)
            links.pushHead(oldest, onto: &probation)
            regions[oldest] = .probation
            candidate = oldest
        }
    }

    private mutating func demoteProtectedOverflow() {
        while protectedIsOver {
            let oldest = protected.tail
            links.unlink(oldest, from: &protected)
            protectedCost -= cost(of: oldest)
            links.pushHead(oldest, onto: &probation)
            regions[oldest] = .probation
        }
    }

    /// Forgets every entry, keeping the arrays' storage.
    mutating func removeAll() {
        links.removeAll()
        hashes.removeAll(keepingCapacity: true)
        regions.removeAll(keepingCapacity: true)
        window = SlotLinks.List()
        probation = SlotLinks.List()
        protected = SlotLinks.List()
        candidate = -1
        costs.removeAll(keepingCapacity: true)
        windowCost = 0
        protectedCost = 0
    }
}
