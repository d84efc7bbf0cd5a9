package import Foundation

/// xxHash64, the checksum of disk headers and payloads: several gigabytes a second, so checking a
/// value costs almost nothing next to the system calls that read it.
package enum XXHash64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        (accumulator &+ input &* prime2).rotatedLeft(31) &* prime1
    }

    @inline(__always)
    private static func merge(_ accumulator: UInt64, _ value: UInt64) -> UInt64 {
        (accumulator ^ round(0, value)) &* prime1 &+ prime4
    }

    /// The digest of the bytes in `buffer`.
    package static func hash(_ buffer: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let count = buffer.count
        var offset = 0
        var digest: UInt64
        @inline(__always) func load64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        }
        @inline(__always) func load32(_ at: Int) -> UInt64 {
            UInt64(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        }
        if count >= 32 {
            var v1 = seed &+ prime1 &+ prime2
            var v2 = seed &+ prime2
            var v3 = seed
            var v4 = seed &- prime1
            while offset + 32 <= count {
                v1 = round(v1, load64(offset))
                v2 = round(v2, load64(offset + 8))
                v3 = round(v3, load64(offset + 16))
                v4 = round(v4, load64(offset + 24))
                offset += 32
            }
            digest = v1.rotatedLeft(1) &+ v2.rotatedLeft(7) &+ v3.rotatedLeft(12) &+ v4.rotatedLeft(18)
            digest = merge(digest, v1)
            digest = merge(digest, v2)
            digest = merge(digest, v3)
            digest = merge(digest, v4)
        } else {
            digest = seed &+ prime5
        }
        digest &+= UInt64(count)
        while offset + 8 <= count {
            digest ^= round(0, load64(offset))
            digest = digest.rotatedLeft(27) &* prime1 &+ prime4
            offset += 8
        }
        if offset + 4 <= count {
            digest ^= load32(offset) &* prime1
            digest = digest.rotatedLeft(23) &* prime2 &+ prime3
            offset += 4
        }
        while offset < count {
            digest ^= UInt64(buffer[offset]) &* prime5
            digest = digest.rotatedLeft(11) &* prime1
            offset += 1
        }
        digest ^= digest >> 33
        digest &*= prime2
        digest ^= digest >> 29
        digest &*= prime3
        digest ^= digest >> 32
        return digest
    }

    /// The digest of `bytes`.
    package static func hash(_ bytes: some ContiguousBytes, seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { hash($0, seed: seed) }
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
