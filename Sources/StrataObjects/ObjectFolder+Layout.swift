import Foundation
import Strata
import _StrataInternals

/// Where `ObjectFolder` keeps each key: the two levels of shard folders, the file names a key is
/// escaped to, and the walk over every record file.
extension ObjectFolder {
    /// The file, shard folder and attachment folder of `key`.
    struct Paths {
        var folder: String
        var name: String
        var file: String { "\(folder)/\(name).json" }
        var attachments: String { "\(folder)/\(name).attachments" }
    }

    /// The paths of `key`'s record, in its stored spelling (see `spellings(of:)`): absolute.
    func paths(forKey key: String) throws(StorageError) -> Paths {
        try paths(spelled: key.nfcNormalized)
    }

    /// The paths of the record of a key spelled exactly `key`.
    func paths(spelled key: String) throws(StorageError) -> Paths {
        let name = try Self.fileName(for: key, what: "key")
        let shard = Self.shard(for: key)
        let folder = "\(root)/\(shard.0)/\(shard.1)"
        return Paths(folder: folder, name: name)
    }

    /// SHELF's two levels: a UUID's own first four digits, else the first four of its SHA-256.
    static func shard(for key: String) -> (Substring, Substring) {
        if isCanonicalUUID(key) {
            let first = key.index(key.startIndex, offsetBy: 2)
            let second = key.index(first, offsetBy: 2)
            return (key[key.startIndex..<first], key[first..<second])
        }
        let digest = SHA256.hash(Array(key.utf8))
        let hex = String(format: "%02X%02X", digest[0], digest[1])
        let middle = hex.index(hex.startIndex, offsetBy: 2)
        return (hex[hex.startIndex..<middle], hex[middle...])
    }

    private static let maximumNameLength = 240

    /// Whether `text` is an upper-case UUID such as `6273674B-F271-4521-9B74-F5656A1F815D`.
    static func isCanonicalUUID(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        for (index, byte) in text.utf8.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                if byte != UInt8(ascii: "-") { return false }
            default:
                let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
                let isUpperHex = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F")
                if !isDigit && !isUpperHex { return false }
            }
        }
        return true
    }

    /// `text` as a file name: safe bytes kept, every other byte `%XX`.
    static func fileName(for text: String, what: String) throws(StorageError) -> String {
        guard !text.isEmpty else {
            throw StorageError(
                .invalidKey,
                key: text,
                storage: "ObjectFolder",
                message: "an empty \(what) is not allowed"
            )
        }
        var name = ""
        if isCanonicalUUID(text) {
            name = text
        } else {
            name.reserveCapacity(text.utf8.count)
            for (offset, byte) in text.utf8.enumerated() {
                let isSafe =
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                    || (byte == UInt8(ascii: ".") && offset > 0)
                if isSafe {
                    name.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    name += String(format: "%%%02X", byte)
                }
                if name.utf8.count > maximumNameLength { break }
            }
        }
        guard name.utf8.count <= maximumNameLength else {
            throw StorageError(
                .invalidKey,
                key: text.count > 64 ? String(text.prefix(64)) + "…" : text,
                storage: "ObjectFolder",
                message: "the \(what) is too long for a file name once escaped (at most \(maximumNameLength) bytes)"
            )
        }
        return name
    }

    /// The text a file name stands for, or `nil` if it is not one of ours.
    static func unescape(_ name: String) -> String? {
        guard name.contains("%") else { return name }
        var bytes: [UInt8] = []
        var utf8 = name.utf8.makeIterator()
        while let byte = utf8.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = utf8.next(), let low = utf8.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    func forEachRecordFile(_ body: (String, String) throws(StorageError) -> Void) throws(StorageError) {
        for first in try folderNames(root) where Self.isShardName(first) {
            let firstPath = "\(root)/\(first)"
            for second in try folderNames(firstPath) where Self.isShardName(second) {
                let folder = "\(firstPath)/\(second)"
                for name in try folderNames(folder) {
                    if name.hasPrefix(TemporaryFiles.prefix) {
                        TemporaryFiles.removeIfAbandoned(name, in: folder)
                        continue
                    }
                    guard name.hasSuffix(".json"), !name.hasPrefix("."),
                        let key = Self.unescape(String(name.dropLast(5)))
                    else { continue }
                    try body(key, "\(folder)/\(name)")
                }
            }
        }
    }

    private static func isShardName(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) }
    }

    private func folderNames(_ path: String) throws(StorageError) -> [String] {
        do {
            return try SystemCalls.contents(of: path) ?? []
        } catch {
            throw StorageError(
                .io,
                storage: "ObjectFolder",
                message: "could not list \(path): \(error)",
                underlying: error
            )
        }
    }
}
