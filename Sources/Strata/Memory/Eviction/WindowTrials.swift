/// Scaled-down copies of an ``AdaptiveQueue``'s cache, one per window size, replaying the requests
/// for a sample of the keys: the size whose copy hits most is the window the cache should have.
///
/// The queue's own window sizing (its ghost queues) measures the next few slots on either side of
/// the window's edge. That finds the best window near the current one, but a workload can pay
/// nothing for a slightly larger window and a lot for a much larger one: when keys are requested
/// again after about a cache's worth of other keys (a transaction log's repeats, a recency-heavy
/// ORM, the LIRS paper's sprite), only a window of most of the cache catches them. Each trial here
/// is the cache at one point of ``fractions``, so the comparison covers the whole range at once
/// (miniature simulation, Waldspurger et al., "Cache Modeling and Optimization using Miniature
/// Simulations", USENIX ATC 2017).
///
/// A key is sampled when its mixed hash falls in the lowest `size / capacity` of the hash range,
/// so each trial holds at most ``maximumSize`` entries and a large cache pays for a trial on one
/// request in `capacity / maximumSize`; a cache of ``maximumSize`` entries or fewer replays every
/// request. Trials decide admission with the queue's own sketches and rules
/// (`AdaptiveQueue.admits(candidate:over:in:)`): a sampled key's estimate is its estimate in the
/// cache.
struct WindowTrials {
    /// One scaled-down cache.
    struct Trial {
        var regions: TinyLFURegions
        /// The slot of each key held, by key hash.
        var slots: TrialSlots
        var freeSlots: [Int] = []
        /// Hits, kept at ``WindowTrials/recentScoreKept`` at the end of each period, so that the
        /// last few periods count most.
        var score = 0.0
        /// Hits, kept at 7/8 at the end of each period, so that about the last eight periods
        /// count: see ``longScoreKept``.
        var longScore = 0.0
        var periodHits = 0
    }

    /// The window sizes tried, as fractions of the capacity: Caffeine's fixed 1%, all but 1% of
    /// the capacity, and 30% between them. The trials find which part of the range pays; the
    /// queue's ghosts then find the window near the point chosen. Five points (1, 10, 30, 60 and
    /// 99%) hit no more over ten runs of the real and synthetic traces (each size within 0.5
    /// points either way, the mean 0.02 lower), and every trial is a replay on each sampled
    /// request. With only 1% and 99%, 5 real sizes fell more than half a point below the best of
    /// LRU, Caffeine 2.6.2 and theine 2.0.0 (one run), and a middle point of 20, 40 or 50% gained
    /// less on the tuning half than 30% (CHANGELOG.md).
    static let fractions = [0.01, 0.3, 0.99]
    /// The most entries a trial holds. With 320, a trial of a large cache samples enough keys to
    /// rank the window sizes on the real and synthetic traces: with 256, the recency0.8 family at
    /// 1,000 entries fell 0.29 points in the mean of ten runs, and 427 ranked them no better and
    /// made an evicting write to a 1,000-entry cache 7% slower. A cache of 320 entries or fewer
    /// replays every request, at about 90 ns a trial on an evicting write (CHANGELOG.md).
    static let maximumSize = 320
    /// How much more the best trial must hit than the trial nearest the cache's window before the
    /// window moves to it: 5% followed the trials' noise on short traces (the LIRS paper's cs at
    /// 141 entries: 1.51 points below Caffeine 2.6.2, against 0 with 15%).
    static let switchingMargin = 0.15
    /// The share of its recent score (``Trial/score``) a trial keeps at the end of each period:
    /// the last two or three periods count, so the window follows a change of workload within
    /// a few periods (the recency families, sprite, a transaction log's repeats).
    static let recentScoreKept = 0.5
    /// The share of its long score a trial keeps at the end of each period. A move needs the
    /// trial that hits most lately (``Trial/score``) to lead over the long run too: where the
    /// best window alternates with bursts a few periods apart (the LIRS paper's zigzag, requests
    /// that sweep back and forth over more keys than the cache holds), the recent score alone
    /// flipped the window between 1% and 99% every period or two, each time a period late, and
    /// hit 6.2-7.1% at 200 entries where LRU hits 9.57% and the 99% trial 9.9%. With both, and
    /// the ghosts leaving the window at the long-run best (``longRunBest``), it hits more than
    /// 9.07% there. 3/4 kept the flips (7.2-7.4%); 15/16 gained nothing more and lost multi2 at
    /// 500. The long score alone, without the recent one, was as good on the real traces but let
    /// recency1.0 fall behind LRU at 1% and 10% (a move to a large window came too late).
    static let longScoreKept = 0.875

    private(set) var trials: [Trial]
    /// Each trial's capacity.
    let size: Int
    /// A key is sampled when its mixed hash is at most this.
    private let threshold: UInt64

    /// Trials for a cache of `capacity` entries.
    init(capacity: Int) {
        let size = max(1, min(capacity, Self.maximumSize))
        self.size = size
        threshold = size >= capacity ? .max : UInt64(Double(size) / Double(capacity) * Double(UInt64.max))
        trials = Self.fractions.map {
            Trial(regions: TinyLFURegions(capacity: size, windowFraction: $0), slots: TrialSlots())
        }
    }

    /// The bytes the trials hold: their tables, and a hash, a region and links for each slot
    /// they have used. Both grow with the entries, as the cache's own do.
    var byteCount: Int {
        trials.reduce(0) { total, trial in
            total + trial.slots.byteCount + trial.regions.slotCount * (MemoryLayout<Int>.stride + 1 + 16)
        }
    }

    /// Whether the key whose mixed hash is `mixed` is one the trials replay.
    @inline(__always)
    func samples(_ mixed: UInt64) -> Bool {
        mixed <= threshold
    }

    /// Replays a request for the key of `hash` in every trial; `queue` judges admissions.
    mutating func request(_ hash: Int, judgedBy queue: AdaptiveQueue) {
        for index in trials.indices {
            trials[index].request(hash, size: size, judgedBy: queue)
        }
    }

    /// Ends a period: the fraction the window should move to, or `nil` to leave it where it is,
    /// when no trial beats the one nearest `current` by ``switchingMargin`` lately and over the
    /// long run (``longScoreKept``).
    mutating func endPeriod(current: Double) -> Double? {
        var best = 0
        var nearest = 0
        for index in trials.indices {
            trials[index].score = trials[index].score * Self.recentScoreKept + Double(trials[index].periodHits)
            trials[index].longScore = trials[index].longScore * Self.longScoreKept + Double(trials[index].periodHits)
            trials[index].periodHits = 0
            if trials[index].score > trials[best].score { best = index }
            if abs(Self.fractions[index] - current) < abs(Self.fractions[nearest] - current) { nearest = index }
        }
        guard trials[best].score > trials[nearest].score * (1 + Self.switchingMargin),
            trials[best].longScore > trials[nearest].longScore
        else { return nil }
        return Self.fractions[best]
    }

    /// The window fraction of the trial with the highest long score: where the window sits there,
    /// the queue's ghosts leave it (see "Window trials" in ``AdaptiveQueue``). Before any trial
    /// has hit, the first, 1%, where a cache starts.
    var longRunBest: Double {
        var best = 0
        for index in trials.indices where trials[index].longScore > trials[best].longScore { best = index }
        return Self.fractions[best]
    }

    /// Forgets every trial's entries and scores.
    mutating func removeAll() {
        trials = Self.fractions.map {
            Trial(regions: TinyLFURegions(capacity: size, windowFraction: $0), slots: TrialSlots())
        }
    }
}

extension WindowTrials.Trial {
    /// A read of the key of `hash`, and on a miss its insertion and, when the trial is full, an
    /// eviction as the cache would make it.
    mutating func request(_ hash: Int, size: Int, judgedBy queue: AdaptiveQueue) {
        if let slot = slots.slot(of: hash) {
            regions.access(slot)
            periodHits += 1
            return
        }
        let slot = freeSlots.popLast() ?? slots.count
        slots.insert(slot, for: hash)
        regions.insert(slot, hash: hash)
        guard slots.count > size else { return }
        let choice = regions.evictionChoice()
        var evicted = choice.victim
        if choice.candidate >= 0, !queue.admits(candidate: choice.candidate, over: choice.victim, in: &regions) {
            evicted = choice.candidate
        }
        slots.remove(regions.hashes[evicted])
        regions.remove(evicted)
        freeSlots.append(evicted)
    }
}

/// A trial's slots by key hash: open addressing with linear probing and backward-shift deletion,
/// so a request hashes nothing more and allocates nothing once the table has grown. It starts at 8
/// buckets and doubles while it is more than half full, up to twice the trial's entries, so that
/// a cache holding few entries reserves little. Key hashes are already spread over 64 bits, so
/// their low bits pick the bucket.
struct TrialSlots {
    private var hashes: [Int]
    /// The slot held under each bucket's hash, or -1 for an empty bucket.
    private var slots: [Int32]
    private var mask: Int
    private(set) var count = 0

    init() {
        hashes = Array(repeating: 0, count: 8)
        slots = Array(repeating: -1, count: 8)
        mask = 7
    }

    /// The bytes of the table.
    var byteCount: Int {
        hashes.capacity * MemoryLayout<Int>.stride + slots.capacity * MemoryLayout<Int32>.stride
    }

    private func bucket(of hash: Int) -> (index: Int, found: Bool) {
        var index = hash & mask
        while slots[index] >= 0 {
            if hashes[index] == hash { return (index, true) }
            index = (index + 1) & mask
        }
        return (index, false)
    }

    func slot(of hash: Int) -> Int? {
        let (index, found) = bucket(of: hash)
        return found ? Int(slots[index]) : nil
    }

    /// Gives `hash`, which is not held, `slot`.
    mutating func insert(_ slot: Int, for hash: Int) {
        if (count + 1) * 2 > slots.count { grow() }
        let (index, _) = bucket(of: hash)
        hashes[index] = hash
        slots[index] = Int32(truncatingIfNeeded: slot)
        count += 1
    }

    private mutating func grow() {
        let oldHashes = hashes
        let oldSlots = slots
        hashes = Array(repeating: 0, count: oldSlots.count * 2)
        slots = Array(repeating: -1, count: oldSlots.count * 2)
        mask = slots.count - 1
        for index in oldSlots.indices where oldSlots[index] >= 0 {
            let (bucket, _) = bucket(of: oldHashes[index])
            hashes[bucket] = oldHashes[index]
            slots[bucket] = oldSlots[index]
        }
    }

    mutating func remove(_ hash: Int) {
        let located = bucket(of: hash)
        guard located.found else { return }
        var index = located.index
        count -= 1
        // Backward-shift deletion: move each later entry of the run into the gap if its home
        // bucket is at or before the gap.
        var next = (index + 1) & mask
        while slots[next] >= 0 {
            let home = hashes[next] & mask
            if (next - home) & mask >= (next - index) & mask {
                hashes[index] = hashes[next]
                slots[index] = slots[next]
                index = next
            }
            next = (next + 1) & mask
        }
        slots[index] = -1
    }
}
