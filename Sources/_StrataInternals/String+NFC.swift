import Foundation

extension String {
    /// The string in Unicode normalization form C, so that keys Swift considers equal
    /// (`"é"` written precomposed or as `e` and a combining accent) have the same bytes: every
    /// storage stores, hashes and compares keys in this form.
    ///
    /// NFC's quick check comes first: text without a code point at or above U+0300 (no UTF-8 byte
    /// at or above 0xCC) is already in NFC, and Foundation's normalization costs microseconds.
    package var nfcNormalized: String {
        utf8.allSatisfy { $0 < 0xCC } ? self : precomposedStringWithCanonicalMapping
    }
}
