import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// The reference implementation's digests: the headers of disk files, and the payloads of
/// format version 1, are checked with xxHash64, so a file written by one build must check out in
/// any other.
@Suite(.onTestThreads) struct XXHash64Tests {
    @Test(
        arguments: [
            ("", 0xef46_db37_51d8_e999 as UInt64),
            ("a", 0xd24e_c4f1_a98c_6e5b),
            ("abc", 0x44bc_2cf5_ad77_0999),
            ("0123456789abcdef0123456789abcdef0123456789", 0xa761_90c3_acf0_8a1c),
        ]
    )
    func digestMatchesTheReference(input: String, expected: UInt64) {
        let digest = XXHash64.hash(Data(input.utf8))

        #expect(digest == expected)
    }

    @Test func digestDoesNotDependOnAlignment() {
        let bytes = [UInt8](repeating: 0, count: 1) + Array("0123456789abcdef0123456789abcdef0123456789".utf8)

        let digest = bytes.withUnsafeBytes { XXHash64.hash(UnsafeRawBufferPointer(rebasing: $0[1...])) }

        #expect(digest == 0xa761_90c3_acf0_8a1c)
    }
}
