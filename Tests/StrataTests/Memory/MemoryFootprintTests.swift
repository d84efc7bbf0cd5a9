import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// A count limit is a ceiling, not a reservation: the eviction policies size their frequency and
/// ghost structures for the entries held, and no limit up to `Int.max / 2` overflows.
@Suite(.onTestThreads) struct MemoryFootprintTests {
    static let policies: [EvictionPolicy] = [.default, .wTinyLFU, .s3FIFO, .leastRecentlyUsed]

    @Test(arguments: policies)
    func aHugeCountLimitWorksAndEvictsNothingItNeedNot(policy: EvictionPolicy) throws {
        for limit in [Int.max / 2, Int(Int32.max), 1_000_000] {
            let cache = MemoryStorage<Int, Int>(maximumCount: limit, evictionPolicy: policy)
            for key in 0..<20_000 { cache.set(key, forKey: key) }
            for key in 0..<20_000 { _ = cache.value(forKey: key) }

            #expect(cache.count == 20_000, "\(policy) with a limit of \(limit) kept \(cache.count)")
            #expect(cache.statistics.evictions == 0)
        }
    }

    @Test(arguments: policies)
    func aFilledCacheStillEvictsToItsLimitAfterGrowing(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 10_000, evictionPolicy: policy)
        for round in 0..<3 {
            for key in 0..<30_000 { cache.set(key, forKey: round * 100_000 + key) }
        }

        #expect(cache.count == 10_000)
    }

    /// Before, a limit of a million reserved its policy's sketch and ghosts for a million entries
    /// (16 to 36 MB) at construction.
    @Test(arguments: policies)
    func whatThePolicyReservesFollowsTheEntriesHeld(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 1_000_000, evictionPolicy: policy)
        for key in 0..<10 { cache.set(key, forKey: key) }
        let nearlyEmpty = cache.cache.policy.withLock { $0.queue.reservedByteCount }
        for key in 0..<200_000 { cache.set(key, forKey: key) }
        let fifthFull = cache.cache.policy.withLock { $0.queue.reservedByteCount }

        #expect(nearlyEmpty <= 200_000, "\(policy) reserved \(nearlyEmpty) bytes for 10 entries")
        // Sized ahead of the entries by less than three times (it doubles), at most 65 bytes an
        // entry (S3-FIFO's ghost): far below a million entries' worth.
        #expect(fifthFull <= 3 * 200_000 * 65, "\(policy) reserved \(fifthFull) bytes for 200,000 entries")
    }
}
