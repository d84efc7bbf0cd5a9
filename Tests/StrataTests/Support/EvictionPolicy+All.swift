import Strata

extension EvictionPolicy {
    /// Every policy, for tests that every policy must pass.
    static let all: [EvictionPolicy] = [.leastRecentlyUsed, .wTinyLFU, .s3FIFO, .adaptive]
}
