import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// FIPS 180-4's examples: the digest names every disk file, so it must match every other
/// implementation, on every platform and in every version.
@Suite(.onTestThreads) struct SHA256Tests {
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    @Test func digestOfTheEmptyMessageMatchesTheStandard() {
        let digest = SHA256.hash([UInt8]())

        #expect(Self.hex(digest) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func digestOfABCMatchesTheStandard() {
        let digest = SHA256.hash("abc".utf8)

        #expect(Self.hex(digest) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func digestOfATwoBlockMessageMatchesTheStandard() {
        let digest = SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)

        #expect(Self.hex(digest) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func digestOfAMillionAsMatchesTheStandard() {
        let digest = SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))

        #expect(Self.hex(digest) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
