/// A small, fast, seeded random generator (Steele, Lea and Flood's SplitMix64): the same seed
/// gives the same numbers on every machine and every run, so the benchmark probes its keys, the
/// traces draw their requests and the demo tells its story the same way each time.
public struct SplitMix64: RandomNumberGenerator {
    @usableFromInline var state: UInt64

    @inlinable
    public init(seed: UInt64) {
        state = seed
    }

    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A double uniformly distributed in [0, 1).
    @inlinable
    public mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A value uniformly distributed in 0..<bound.
    @inlinable
    public mutating func next(below bound: Int) -> Int {
        Int(truncatingIfNeeded: next().multipliedFullWidth(by: UInt64(bound)).high)
    }
}
