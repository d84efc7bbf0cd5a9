import Foundation

extension String {
    /// The string in Unicode normalization form C, so that keys Swift considers equal
    /// (`"é"` written precomposed or as `e` and a combining accent) have the same bytes: every
    /// storage stores, hashes and compares keys in this form.
    ///
    /// NFC's quick check comes first: text without a code point at or above U+0300 (no UTF-8 byte
    /// at or above 0xCC) is already in NFC, and Foundation's normalization costs microseconds.
    package var nfcNormalized: String {
        let quick = utf8.withContiguousStorageIfAvailable { bytes in
            // Eight bytes at a time: only a word with a byte at or above 0x80 can hold one at or
            // above 0xCC, and only such a word is looked at byte by byte.
            var index = 0
            while index + 8 <= bytes.count {
                let word = UnsafeRawPointer(bytes.baseAddress.unsafelyUnwrapped + index).loadUnaligned(as: UInt64.self)
                if word & 0x8080_8080_8080_8080 != 0 {
                    for byte in bytes[index..<(index + 8)] where byte >= 0xCC { return false }
                }
                index += 8
            }
            for byte in bytes[index...] where byte >= 0xCC { return false }
            return true
        }
        let isNFC = quick ?? utf8.allSatisfy { $0 < 0xCC }
        return isNFC ? self : precomposedStringWithCanonicalMapping
    }

    /// The string whose UTF-8 encoding is `bytes`, or `nil` when they are not valid UTF-8:
    /// `String(validating:as:)` for a buffer, without that initializer's generic path.
    package init?(validatingUTF8Bytes bytes: UnsafeRawBufferPointer) {
        let decoded = String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
        // Decoding repairs invalid sequences with U+FFFD, which changes the bytes.
        guard decoded.hasUTF8(bytes) else { return nil }
        self = decoded
    }

    /// Whether the string's UTF-8 encoding is exactly `bytes`.
    package func hasUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard utf8.count == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return true }
        return utf8.withContiguousStorageIfAvailable { utf8 in
            memcmp(utf8.baseAddress.unsafelyUnwrapped, base, bytes.count) == 0
        } ?? utf8.elementsEqual(bytes)
    }
}

extension String {
    /// `folder + "/" + name`, made by copying bytes: `+` takes a generic path that costs several
    /// times more, paid once per file when a folder of many is indexed and once per disk read.
    package static func path(_ folder: String, _ name: String) -> String {
        var folder = folder
        var name = name
        return folder.withUTF8 { folder in
            name.withUTF8 { name in
                String(unsafeUninitializedCapacity: folder.count + 1 + name.count) { path in
                    guard let base = path.baseAddress else { return 0 }
                    if let folderBase = folder.baseAddress { base.update(from: folderBase, count: folder.count) }
                    base[folder.count] = UInt8(ascii: "/")
                    if let nameBase = name.baseAddress {
                        (base + folder.count + 1).update(from: nameBase, count: name.count)
                    }
                    return folder.count + 1 + name.count
                }
            }
        }
    }
}
