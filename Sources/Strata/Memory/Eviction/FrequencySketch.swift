import _StrataInternals

/// An approximate count of how often each key hash was seen recently: a count-min sketch of 4-bit
/// counters behind a one-bit doorkeeper, halved periodically so that old popularity fades (the
/// TinyLFU design).
///
/// A hash's first sighting since the last halving only sets its two doorkeeper bits; later ones
/// increment its four counters, which share one 64-byte block so that an update touches one cache
/// line. Every `samplePeriod` sightings all counters are halved and the doorkeeper is cleared.
/// Fixed-size: ``increment(_:)`` and ``frequency(of:)`` never allocate. A halving walks the whole
/// table, so it costs O(counters / 16 + doorkeeper bits / 64) once per period.
struct FrequencySketch {
    /// The ceiling of a 4-bit counter. A halving brings a saturated key to half of it, 7, and its
    /// doorkeeper bit is cleared with the rest, so its estimate reads 7 until it is seen again.
    static let saturatedCounter = 15

    /// Counters, 16 to a word, in blocks of 8 words; each row of a hash uses two words of its block.
    private var table: [UInt64]
    private let blockMask: UInt64
    private var doorkeeper: [UInt64]
    private let doorkeeperMask: UInt64
    /// Sightings since the last periodic halving.
    private(set) var samples = 0
    /// Sightings since the last halving of any kind, periodic or by ``age()``.
    private(set) var samplesSinceHalving = 0
    /// Sightings between two periodic halvings.
    let samplePeriod: Int

    /// Creates a sketch with at least `counters` counters that halves every `samplePeriod`
    /// sightings, with `doorkeeperBitsPerSample` doorkeeper bits per sighting of a period.
    init(counters: Int, samplePeriod: Int, doorkeeperBitsPerSample: Int) {
        let words = Self.powerOfTwo(atLeast: max(counters / 16, 8))
        table = Array(repeating: 0, count: words)
        blockMask = UInt64(words / 8 - 1)
        self.samplePeriod = max(samplePeriod, 16)
        let doorkeeperWords = Self.powerOfTwo(atLeast: self.samplePeriod * doorkeeperBitsPerSample / 64)
        doorkeeper = Array(repeating: 0, count: doorkeeperWords)
        doorkeeperMask = UInt64(doorkeeperWords * 64 - 1)
    }

    /// Takes every estimate of `smaller`, which has no more counters or doorkeeper bits, for a
    /// sketch just made larger; its own counts are replaced.
    ///
    /// A hash's counters sit in the block its low bits choose, at places in the block that its
    /// high bits choose, and its doorkeeper bits likewise at places its low bits choose; a table
    /// twice as large uses one more low bit. Copying each block (and each doorkeeper word) to
    /// every place of the larger table that extends its index therefore gives each hash the
    /// counters and bits it had, and a growing cache keeps the history its admissions depend on;
    /// collisions fade as counts diverge and halve. O(counters / 16 + doorkeeper bits / 64).
    mutating func takeCounts(of smaller: FrequencySketch) {
        if table.count >= smaller.table.count {
            for index in table.indices { table[index] = smaller.table[index % smaller.table.count] }
        }
        if doorkeeper.count >= smaller.doorkeeper.count {
            for index in doorkeeper.indices { doorkeeper[index] = smaller.doorkeeper[index % smaller.doorkeeper.count] }
        }
        samples = min(smaller.samples, samplePeriod - 1)
        samplesSinceHalving = smaller.samplesSinceHalving
    }

    /// The entries a policy first sizes its sketch (and the structures that go with it) for: the
    /// count limit up to 4,096, or 64 with no count limit. Memory then follows use: see
    /// ``grownCapacity(_:forSlot:limit:)``.
    static func initialCapacity(forLimit limit: Int) -> Int {
        limit == .max ? 64 : min(max(limit, 1), 4_096)
    }

    /// The entries to size for once `slot` is taken, or `nil` to stay at `capacity`.
    ///
    /// With a count limit the sketch doubles whenever the slots reach half of what it was sized
    /// for, up to the limit, so it has its full size by the time the cache is half full (as
    /// Caffeine sizes its sketch), long before anything is evicted; a limit of a million costs
    /// nothing until entries arrive, and no limit up to `Int.max` overflows. With no count limit
    /// (a cost limit alone) it doubles whenever the slots reach it, so it is sized for one to two
    /// times the entries held, as a count-limited sketch is for its limit. Policies grow their
    /// sketch with ``takeCounts(of:)``, which keeps
    /// their counts: a new sketch at each doubling forgot, under a cost limit alone, the history
    /// that loops need, and lost up to 15 points of hit ratio against the same cache limited by
    /// count (the LIRS paper's glimpse trace at 1,000 entries: 35.4% against 50.7%).
    static func grownCapacity(_ capacity: Int, forSlot slot: Int, limit: Int) -> Int? {
        if limit == .max {
            return slot >= capacity ? capacity * 2 : nil
        }
        guard capacity < limit, slot >= capacity / 2 else { return nil }
        return capacity > limit / 2 ? limit : capacity * 2
    }

    /// The bytes of the counters and the doorkeeper.
    var byteCount: Int { (table.capacity + doorkeeper.capacity) * MemoryLayout<UInt64>.stride }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        var result = 1
        while result < value { result <<= 1 }
        return result
    }

    /// Spreads a key hash over 64 bits (the SplitMix64 finalizer), so that sketches and ghost
    /// queues do not depend on the quality of the key's `hashValue`.
    @inline(__always)
    static func mix(_ hash: Int) -> UInt64 {
        var x = UInt64(bitPattern: Int64(hash)) &+ 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    /// The estimated number of sightings of `hash`, from 0 to 16: its smallest counter, plus one if
    /// its doorkeeper bits are set.
    func frequency(of hash: Int) -> Int {
        let mixed = Self.mix(hash)
        let seen = doorkeeperContains(mixed)
        return Int(truncatingIfNeeded: minimumCounter(mixed)) + (seen ? 1 : 0)
    }

    /// Records one sighting of `hash`, and returns whether it had been seen since the last
    /// halving (its doorkeeper bits were set).
    @discardableResult
    mutating func increment(_ hash: Int) -> Bool {
        let mixed = Self.mix(hash)
        let seen = doorkeeperContains(mixed)
        if seen {
            let block = Self.block(mixed, mask: blockMask)
            for row in 0..<4 {
                let (word, shift) = Self.position(mixed, row: row, block: block)
                if (table[word] >> shift) & 15 != 15 {
                    table[word] &+= 1 << shift
                }
            }
        } else {
            doorkeeperInsert(mixed)
        }
        samples += 1
        samplesSinceHalving += 1
        if samples >= samplePeriod {
            halve()
            samples = 0
        }
        return seen
    }

    /// Starts loading what ``increment(_:)`` of `hash` touches: its doorkeeper words and its
    /// block of counters. A hint: nothing changes.
    func prefetch(_ hash: Int) {
        let mixed = Self.mix(hash)
        let (first, second) = doorkeeperBits(mixed)
        doorkeeper.withUnsafeBufferPointer { words in
            Strata.prefetch(words.baseAddress! + (first >> 6))
            Strata.prefetch(words.baseAddress! + (second >> 6))
        }
        let block = Self.block(mixed, mask: blockMask)
        // A block is 64 bytes, which may start anywhere in a cache line.
        table.withUnsafeBufferPointer { words in
            Strata.prefetch(words.baseAddress! + block)
            Strata.prefetch(words.baseAddress! + block + 7)
        }
    }

    /// Halves every counter and clears the doorkeeper now, without moving the next periodic
    /// halving, so that popularity fades faster.
    mutating func age() {
        halve()
    }

    /// Forgets every sighting.
    mutating func removeAll() {
        for index in table.indices { table[index] = 0 }
        for index in doorkeeper.indices { doorkeeper[index] = 0 }
        samples = 0
        samplesSinceHalving = 0
    }

    private mutating func halve() {
        samplesSinceHalving = 0
        for index in table.indices {
            table[index] = (table[index] >> 1) & 0x7777_7777_7777_7777
        }
        for index in doorkeeper.indices {
            doorkeeper[index] = 0
        }
    }

    @inline(__always)
    private func minimumCounter(_ mixed: UInt64) -> UInt64 {
        let block = Self.block(mixed, mask: blockMask)
        var minimum: UInt64 = 15
        for row in 0..<4 {
            let (word, shift) = Self.position(mixed, row: row, block: block)
            minimum = min(minimum, (table[word] >> shift) & 15)
        }
        return minimum
    }

    /// The first word of the hash's block.
    @inline(__always)
    private static func block(_ mixed: UInt64, mask: UInt64) -> Int {
        Int(truncatingIfNeeded: (mixed & mask) << 3)
    }

    /// Row `row`'s counter for a mixed hash: one of the row's two words in the block (bits 20–23
    /// choose), and one of the word's 16 nibbles (bits 32–47 choose).
    @inline(__always)
    private static func position(_ mixed: UInt64, row: Int, block: Int) -> (word: Int, shift: UInt64) {
        let word = block + row * 2 + Int(truncatingIfNeeded: (mixed >> (20 + UInt64(row))) & 1)
        let shift = ((mixed >> (32 + UInt64(row) * 4)) & 15) << 2
        return (word, shift)
    }

    /// Two bit positions for a mixed hash, from the high halves of two products so that they are
    /// independent of the bits that chose the counters.
    @inline(__always)
    private func doorkeeperBits(_ mixed: UInt64) -> (Int, Int) {
        let first = (mixed &* 0xD6E8_FEB8_6659_FD93) >> 32 & doorkeeperMask
        let second = (mixed &* 0x9FB2_1C65_1E98_DF25) >> 32 & doorkeeperMask
        return (Int(truncatingIfNeeded: first), Int(truncatingIfNeeded: second))
    }

    @inline(__always)
    private func doorkeeperContains(_ mixed: UInt64) -> Bool {
        let (first, second) = doorkeeperBits(mixed)
        return doorkeeper[first >> 6] & (1 << UInt64(first & 63)) != 0
            && doorkeeper[second >> 6] & (1 << UInt64(second & 63)) != 0
    }

    @inline(__always)
    private mutating func doorkeeperInsert(_ mixed: UInt64) {
        let (first, second) = doorkeeperBits(mixed)
        doorkeeper[first >> 6] |= 1 << UInt64(first & 63)
        doorkeeper[second >> 6] |= 1 << UInt64(second & 63)
    }
}
