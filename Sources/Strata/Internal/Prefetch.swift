internal import CStrata

/// Asks the processor to start loading the cache line at `address` for a write, without waiting
/// for it: a hint that never faults. A batch of independent reads of a large structure issues
/// one for each before touching any, so that their cache misses overlap.
@usableFromInline
func prefetch(_ address: UnsafeRawPointer) {
    strata_prefetch(address)
}
