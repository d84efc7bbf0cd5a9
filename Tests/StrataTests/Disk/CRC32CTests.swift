import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// CRC-32C, the payload checksum of disk format version 2, against the published vectors (RFC
/// 3720, appendix B.4, and the "123456789" check value), on both the processor's instructions and
/// the portable tables, which must agree everywhere: a file written on one machine must check out
/// on any other.
@Suite(.onTestThreads) struct CRC32CTests {
    static let vectors: [(name: String, bytes: [UInt8], expected: UInt32)] = [
        ("empty", [], 0),
        ("check value", Array("123456789".utf8), 0xE306_9283),
        ("32 zeros", [UInt8](repeating: 0, count: 32), 0x8A91_36AA),
        ("32 ones", [UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
        ("ascending", (0..<32).map { UInt8($0) }, 0x46DD_794E),
        ("descending", (0..<32).map { UInt8(31 - $0) }, 0x113F_DB5C),
        (
            "iSCSI read",
            [
                0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
                0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            ],
            0xD996_3A56
        ),
    ]

    @Test(arguments: vectors.indices)
    func bothPathsMatchThePublishedVectors(index: Int) {
        let vector = Self.vectors[index]

        let checked = vector.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        let streams = vector.bytes.withUnsafeBytes { CRC32C.streamsChecksum($0) }
        let portable = vector.bytes.withUnsafeBytes { CRC32C.portableChecksum($0) }

        #expect(checked == vector.expected, "\(vector.name)")
        #expect(streams == vector.expected, "\(vector.name)")
        #expect(portable == vector.expected, "\(vector.name)")
    }

    /// Every length the three-stream loops split differently (below a short block, around the
    /// short and long blocks, past several long blocks), and every length the folding loops split
    /// differently (around the 1 KiB where folding starts, then each remainder of the 256-, 64-
    /// and 16-byte steps), at every alignment: the checksum as used (folded where the machine
    /// can) and the three streams alone (which a machine that folds uses only below 1 KiB).
    @Test(arguments: ["as used", "three streams"])
    func theFastPathsAgreeWithThePortableOneAtEveryLengthAndAlignment(path: String) {
        let checksum = path == "as used" ? CRC32C.checksum : CRC32C.streamsChecksum
        var generator = SeededRandomNumberGenerator(seed: 0xC3C)
        let bytes = (0..<(200_000 + 8)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let lengths =
            Array(0...1_100) + Array(4_096...4_400) + [
                3 * 256 - 1, 3 * 256, 3 * 256 + 1, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 777,
            ]
            + [100_000, 200_000]
        var mismatches: [String] = []
        bytes.withUnsafeBytes { buffer in
            for length in lengths {
                for offset in 0..<8 {
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                    if checksum(slice, 0) != CRC32C.portableChecksum(slice) {
                        mismatches.append("length \(length), offset \(offset)")
                    }
                }
            }
        }

        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test func aChecksumContinuesAcrossPieces() {
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 131) }

        let whole = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        let pieced = bytes.withUnsafeBytes { buffer in
            let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<12_345]))
            return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[12_345...]), continuing: first)
        }

        #expect(pieced == whole)
    }

    /// Where the machine has the instructions (every x86-64 with SSE 4.2, every 64-bit ARM built
    /// with the CRC extension), the fast path must be in use.
    @Test func theProcessorsInstructionsAreUsedWhereTheMachineHasThem() throws {
        #if arch(x86_64) && os(Linux)
        let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let hasSSE42 = flags.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ")
            .contains("sse4_2")
        #expect(CRC32C.isHardwareAccelerated == (hasSSE42 ?? false))
        #elseif arch(arm64) && canImport(Darwin)
        #expect(CRC32C.isHardwareAccelerated)
        #endif
    }

    /// Where the processor has AVX-512 and VPCLMULQDQ and the kernel saves their registers,
    /// long inputs are folded; elsewhere never.
    @Test func longInputsAreFoldedWhereTheMachineHasAVX512AndVPCLMULQDQ() throws {
        #if arch(x86_64) && os(Linux)
        let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let names = Set(flags.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ") ?? [])
        let canFold = ["avx512f", "vpclmulqdq", "pclmulqdq", "sse4_2"].allSatisfy { names.contains(Substring($0)) }
        #expect(CRC32C.folds == canFold)
        #else
        #expect(!CRC32C.folds)
        #endif
    }
}
