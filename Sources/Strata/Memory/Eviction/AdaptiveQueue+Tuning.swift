/// Every tuned number of ``AdaptiveQueue``, in one place, each with the rule it belongs to (the
/// sections of ``AdaptiveQueue``'s documentation) and the trace family it was tuned for. The
/// window trials' own numbers are in ``WindowTrials``. A number here changes only with the hit
/// ratios of both halves of `strata-bench hitrate` (the tuning and the validation traces) beside
/// it, as the eviction guide says.
extension AdaptiveQueue {
    // MARK: History

    /// Counters of the long history per entry, and at least this many in all: enough that a warm
    /// key and a cold one read apart in a small cache (the LIRS paper's small sizes).
    static let longCountersPerEntry = 32
    static let minimumLongCounters = 8_192
    /// Sightings per entry between two halvings of the long history, and at least this many: a
    /// history long enough for loops, scans and zigzag (halved every 10 × capacity, as Caffeine's,
    /// the loop at 512 entries fell 1.67 points below; without the floor, scan and zigzag at 200
    /// fell 1.16 and 0.98 below).
    static let longSightingsPerEntry = 30
    static let minimumLongSightings = 50_000
    /// Doorkeeper bits per sighting, in both histories.
    static let doorkeeperBitsPerSample = 2

    // MARK: A second opinion

    /// The short history's counters per entry and floor ("A second opinion"): it only breaks ties
    /// in the long history, and 16 per entry gained 0.01 points on the real traces.
    static let recentCountersPerEntry = 8
    static let minimumRecentCounters = 1_024
    /// The short history's sightings per entry between halvings (Caffeine's 10), and floor.
    static let recentSightingsPerEntry = 10
    static let minimumRecentSightings = 100
    /// The long-history estimate from which a refused candidate asks the short history, and by
    /// how much it must lead there: cpp at 122 entries, multi3's small sizes.
    static let secondOpinionEstimate = 4
    static let secondOpinionMargin = 2

    // MARK: Periods

    /// The fewest requests in a period of the shift detection, the window sizing and the
    /// trials: with 5,000, a small cache on a trace of a few thousand requests per phase (the
    /// LIRS paper's ps, multi2, sprite) had too few periods to notice a shift or size its window
    /// (ps at 31 entries: 1.18% against Caffeine's 12.17%).
    static let minimumPeriod = 1_000
    /// A period in which fewer than one request in this many recurs (a hit, or a miss on a key
    /// seen since the last halving) is a scan, and says nothing about a shift: the scan traces.
    static let scanShare = 8

    // MARK: Shift detection

    /// A period's recurring hit ratio below this share of the running average is a drop, and
    /// below the second share a deep one (the history is halved twice): the mixed traces of the
    /// LIRS paper (multi1-3), whose phases change the popular set partly.
    static let shiftDrop = 0.75
    static let deepShiftDrop = 0.6
    /// A drop of less than this, in hit ratio, is noise, whatever the share.
    static let minimumShiftDrop = 0.02
    /// The periods after a shift during which a new drop is not taken for one.
    static let shiftCooldown = 2
    /// The weight of the last period in the running average of the recurring hit ratio.
    static let averageWeight = 0.25
    /// The candidates the window lost that must come back in a period before the period's drop in
    /// hit ratio counts as a shift, or its ghost hits can grow the window: multi3 at 745 entries
    /// (no ghost hit in its false shifts), a popular set replaced at once (26-39 in a period).
    static let telltaleWindowGhostHits = 8

    // MARK: Window sizing

    /// The window's bounds, as fractions of the capacity: the smallest and the largest window
    /// the trials try (Caffeine's starting 1%, and all but 1% of the capacity).
    static let minimumWindowFraction = WindowTrials.fractions.first!
    static let maximumWindowFraction = WindowTrials.fractions.last!
    /// The window moves by capacity / this many slots a period, a step (twice the last step while
    /// it keeps moving the same way), and each ghost queue holds one step's worth of hashes, and at
    /// least the floor: glimpse, web12, sprite.
    static let windowStepShare = 32
    static let minimumGhostCapacity = 8

    // MARK: Close calls after a halving

    /// For 1 / this share of a halving period after a halving, a candidate must beat a victim at
    /// or above the estimate a saturated key reads just after a halving (not a tuned number) by
    /// more than the margin: loops slightly larger than the cache (the LIRS paper's loop), which
    /// otherwise evict after each halving the keys they are about to request.
    static let closeCallShare = 3
    static let closeCallEstimate = FrequencySketch.saturatedCounter / 2
    static let closeCallMargin = 1

    // MARK: Correlated hits

    /// While the window holds at most this fraction of the capacity, a hit in it counts in the
    /// history only while the key's estimate is below the second number: phases whose first
    /// bursts carried their keys past main's victims (multi1-3, ps).
    static let correlatedWindowFraction = 0.05
    static let correlatedEstimate = 2

    // MARK: Frequent candidates refused

    /// The estimate from which a refused candidate counts towards halving early, the share of the
    /// capacity (1 / this) that such refusals must reach in a period, and the window ghost hits
    /// that must come with them: cpp at 50 entries, whose popular set changes in part.
    static let frequentEstimate = 11
    static let frequentRefusalShare = 20
    static let frequentGhostHits = 1

    // MARK: Victims take turns

    /// The estimate from which a refused candidate sends its victim to the back of probation:
    /// cpp at 122 entries, where one old key refused every newcomer in turn.
    static let rotationEstimate = 5

    // MARK: Admission under a cost limit

    /// The most victims a candidate is weighed against at once under a cost limit (the rule's
    /// exponent, `m^¾ · s^¼`, is in `admitsWeighingCost(candidate:over:)`): the `--sized` runs.
    static let maximumCostVictims = 32
}
