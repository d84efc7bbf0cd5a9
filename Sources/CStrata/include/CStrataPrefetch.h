#ifndef C_STRATA_PREFETCH_H
#define C_STRATA_PREFETCH_H

/// Asks the processor to start loading the cache line at `address` for a write soon, without
/// waiting for it: a hint that never faults, whatever the address. An eviction policy issues one
/// for each entry a batch of reads will touch, so that their cache misses overlap instead of
/// following one another.
static inline void strata_prefetch(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
