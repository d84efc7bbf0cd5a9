#if Postgres
/// The 64-bit FNV-1a hash: the same in every process and every release, so it can name things
/// that outlive a process (an index's name in the schema, an advisory lock's id that servers of
/// two releases take during a rolling deploy). Changing it renames indexes and splits locks.
package enum FNV1a {
    /// The hash of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }
}
#endif
