/// SHA-256 (FIPS 180-4), used to name disk files by key: stable across processes, platforms and
/// versions, unlike `Hasher`, and with no collisions anyone can construct.
package struct SHA256 {
    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// The 32-byte digest of `bytes`.
    package static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { hash($0) }
    }

    /// The first `byteCount` bytes of `digest` as lowercase hexadecimal, `2 * byteCount`
    /// characters; missing bytes read as zero.
    package static func hexadecimal(_ digest: [UInt8], byteCount: Int) -> String {
        String(unsafeUninitializedCapacity: 2 * byteCount) { characters in
            let hex: StaticString = "0123456789abcdef"
            for index in 0..<byteCount {
                let byte = index < digest.count ? digest[index] : 0
                characters[2 * index] = hex.utf8Start[Int(byte >> 4)]
                characters[2 * index + 1] = hex.utf8Start[Int(byte & 0x0f)]
            }
            return 2 * byteCount
        }
    }

    /// The 32-byte digest of the bytes in `message`.
    ///
    /// Whole blocks are compressed straight from `message`; the last one or two, padded, from a
    /// buffer on the stack, so a digest allocates nothing but its result. Disk keys are short: a
    /// key of up to 55 bytes is one block.
    package static func hash(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var state = State()
        let count = message.count
        var offset = 0
        while count - offset >= 64 {
            state.compress(UnsafeRawBufferPointer(rebasing: message[offset..<(offset + 64)]))
            offset += 64
        }
        withUnsafeTemporaryAllocation(byteCount: 128, alignment: 8) { tail in
            let remaining = count - offset
            tail.initializeMemory(as: UInt8.self, repeating: 0)
            if remaining > 0 {
                tail.copyMemory(from: UnsafeRawBufferPointer(rebasing: message[offset...]))
            }
            tail[remaining] = 0x80
            let blocks = remaining + 9 <= 64 ? 1 : 2
            let bitLength = UInt64(count) &* 8
            tail.storeBytes(of: bitLength.bigEndian, toByteOffset: blocks * 64 - 8, as: UInt64.self)
            for block in 0..<blocks {
                state.compress(UnsafeRawBufferPointer(rebasing: tail[(block * 64)..<(block * 64 + 64)]))
            }
        }
        return state.digest
    }

    /// The eight working words, and the compression function over one 64-byte block.
    private struct State {
        var h0: UInt32 = 0x6a09_e667
        var h1: UInt32 = 0xbb67_ae85
        var h2: UInt32 = 0x3c6e_f372
        var h3: UInt32 = 0xa54f_f53a
        var h4: UInt32 = 0x510e_527f
        var h5: UInt32 = 0x9b05_688c
        var h6: UInt32 = 0x1f83_d9ab
        var h7: UInt32 = 0x5be0_cd19

        mutating func compress(_ block: UnsafeRawBufferPointer) {
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                for i in 0..<16 {
                    w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
                }
                for i in 16..<64 {
                    let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                    let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                    w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                }
                SHA256.k.withUnsafeBufferPointer { k in
                    var a = h0
                    var b = h1
                    var c = h2
                    var d = h3
                    var e = h4
                    var f = h5
                    var g = h6
                    var hh = h7
                    for i in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choice = (e & f) ^ (~e & g)
                        let temp1 = hh &+ s1 &+ choice &+ k[i] &+ w[i]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = s0 &+ majority
                        hh = g
                        g = f
                        f = e
                        e = d &+ temp1
                        d = c
                        c = b
                        b = a
                        a = temp1 &+ temp2
                    }
                    h0 &+= a
                    h1 &+= b
                    h2 &+= c
                    h3 &+= d
                    h4 &+= e
                    h5 &+= f
                    h6 &+= g
                    h7 &+= hh
                }
            }
        }

        var digest: [UInt8] {
            [UInt8](unsafeUninitializedCapacity: 32) { buffer, initialized in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                raw.storeBytes(of: h0.bigEndian, toByteOffset: 0, as: UInt32.self)
                raw.storeBytes(of: h1.bigEndian, toByteOffset: 4, as: UInt32.self)
                raw.storeBytes(of: h2.bigEndian, toByteOffset: 8, as: UInt32.self)
                raw.storeBytes(of: h3.bigEndian, toByteOffset: 12, as: UInt32.self)
                raw.storeBytes(of: h4.bigEndian, toByteOffset: 16, as: UInt32.self)
                raw.storeBytes(of: h5.bigEndian, toByteOffset: 20, as: UInt32.self)
                raw.storeBytes(of: h6.bigEndian, toByteOffset: 24, as: UInt32.self)
                raw.storeBytes(of: h7.bigEndian, toByteOffset: 28, as: UInt32.self)
                initialized = 32
            }
        }
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self >> count) | (self << (32 - count))
    }
}
