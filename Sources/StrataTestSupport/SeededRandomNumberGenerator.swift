package import _StrataInternals

/// The tests' seeded generator: Strata's one `SplitMix64`, whose sequence is fixed by its seed,
/// so a failing stress run can be repeated.
package typealias SeededRandomNumberGenerator = SplitMix64
