public import Foundation
public import Strata

/// Keeps ``HTTPCacheRecord``s as compact binary: the body as it is, then the head (validators,
/// caching headers, times, variant), then a trailer with the head's length, a format version and
/// a magic number. No base64, no JSON: a stored response takes its body's bytes and about a
/// hundred more, and reading one decodes only the head.
///
/// ```swift
/// let records = try DiskStorage(url: folder).httpCacheRecords()
/// let feeds = HTTPSource().cache(in: records).coordinated()
/// ```
///
/// A record in another format (JSON written through `.json(HTTPCacheRecord.self)`, or a format
/// version this one does not know) fails to decode with an ``HTTPCacheRecordFormatError`` whose
/// ``HTTPCacheRecordFormatError/isOtherFormat`` is set; ``HTTPCache`` reads it as a miss and
/// replaces it. Any task may use it.
public struct HTTPCacheRecordCodec: Codec {
    /// The format version this codec writes and reads.
    public static let formatVersion: UInt8 = 1
    /// The last four bytes of every record.
    static let magic: [UInt8] = Array("SHCR".utf8)
    /// The trailer: the head's byte count (4, little-endian), the format version (1), the magic (4).
    static let trailerByteCount = 9

    /// Creates the codec.
    public init() {}

    /// Encodes `record`: body, head, trailer.
    public func encode(_ record: HTTPCacheRecord) throws -> Data {
        var head = [UInt8]()
        head.reserveCapacity(64)
        head.append((record.listsVariants ? 1 : 0) | (record.freshUntil != nil ? 2 : 0))
        Self.append(record.received.timeIntervalSinceReferenceDate.bitPattern, to: &head)
        if let freshUntil = record.freshUntil {
            Self.append(freshUntil.timeIntervalSinceReferenceDate.bitPattern, to: &head)
        }
        for text in [record.entityTag, record.lastModified, record.cacheControl, record.expires] {
            if let text {
                Self.appendVarint(text.utf8.count + 1, to: &head)
                head.append(contentsOf: text.utf8)
            } else {
                Self.appendVarint(0, to: &head)
            }
        }
        Self.appendVarint(record.vary.count, to: &head)
        for name in record.vary { Self.appendString(name, to: &head) }
        Self.appendVarint(record.selectingHeaders.count, to: &head)
        for (name, value) in record.selectingHeaders.sorted(by: { $0.key < $1.key }) {
            Self.appendString(name, to: &head)
            Self.appendString(value, to: &head)
        }
        var encoded = Data(capacity: record.body.count + head.count + Self.trailerByteCount)
        encoded.append(record.body)
        encoded.append(contentsOf: head)
        withUnsafeBytes(of: UInt32(head.count).littleEndian) { encoded.append(contentsOf: $0) }
        encoded.append(Self.formatVersion)
        encoded.append(contentsOf: Self.magic)
        return encoded
    }

    /// Decodes a record written by ``encode(_:)``.
    ///
    /// - Throws: ``HTTPCacheRecordFormatError``: ``HTTPCacheRecordFormatError/isOtherFormat``
    ///   for a record in JSON or in another format version, unset for damaged bytes.
    public func decode(_ encoded: Data) throws -> HTTPCacheRecord {
        let count = encoded.count
        guard count >= Self.trailerByteCount, encoded.suffix(4).elementsEqual(Self.magic) else {
            if encoded.first == UInt8(ascii: "{") {
                throw HTTPCacheRecordFormatError(isOtherFormat: true, reason: "the record is JSON, an earlier format")
            }
            throw HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the record has no trailer")
        }
        let start = encoded.startIndex
        let version = encoded[start + count - 5]
        guard version == Self.formatVersion else {
            throw HTTPCacheRecordFormatError(
                isOtherFormat: true,
                reason: "the record is in format version \(version); this version reads \(Self.formatVersion)"
            )
        }
        let headByteCount = (0..<4).reduce(0) { $0 | Int(encoded[start + count - 9 + $1]) << (8 * $1) }
        let bodyByteCount = count - Self.trailerByteCount - headByteCount
        guard bodyByteCount >= 0 else {
            throw HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the head is longer than the record")
        }
        var reader = HeadReader(encoded, from: start + bodyByteCount, to: start + bodyByteCount + headByteCount)
        let flags = try reader.byte()
        let received = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64()))
        let freshUntil =
            flags & 2 != 0 ? Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64())) : nil
        var texts: [String?] = []
        for _ in 0..<4 {
            let length = try reader.varint()
            texts.append(length == 0 ? nil : try reader.string(byteCount: length - 1))
        }
        var vary: [String] = []
        for _ in 0..<(try reader.varint()) { vary.append(try reader.string(byteCount: try reader.varint())) }
        var selecting: [String: String] = [:]
        for _ in 0..<(try reader.varint()) {
            let name = try reader.string(byteCount: try reader.varint())
            selecting[name] = try reader.string(byteCount: try reader.varint())
        }
        guard reader.isAtEnd else {
            throw HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the head has bytes after its end")
        }
        // The body shares the record's bytes: a slice from the record's own start index,
        // rebased to a fresh Data only when the record was itself a slice.
        let body = encoded[start..<(start + bodyByteCount)]
        return HTTPCacheRecord(
            body: start == 0 ? body : Data(body),
            entityTag: texts[0],
            lastModified: texts[1],
            cacheControl: texts[2],
            expires: texts[3],
            received: received,
            freshUntil: freshUntil,
            vary: vary,
            selectingHeaders: selecting,
            listsVariants: flags & 1 != 0
        )
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
        var value = UInt64(value)
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func appendString(_ text: String, to bytes: inout [UInt8]) {
        appendVarint(text.utf8.count, to: &bytes)
        bytes.append(contentsOf: text.utf8)
    }

    /// Reads the head's fields, failing on any byte past its end.
    private struct HeadReader {
        let data: Data
        var index: Int
        let end: Int

        init(_ data: Data, from start: Int, to end: Int) {
            self.data = data
            self.index = start
            self.end = end
        }

        var isAtEnd: Bool { index == end }

        mutating func byte() throws -> UInt8 {
            guard index < end else { throw Self.truncated }
            defer { index += 1 }
            return data[index]
        }

        mutating func uint64() throws -> UInt64 {
            var value: UInt64 = 0
            for shift in 0..<8 { value |= UInt64(try byte()) << (8 * UInt64(shift)) }
            return value
        }

        mutating func varint() throws -> Int {
            var value = 0
            for shift in stride(from: 0, to: 63, by: 7) {
                let byte = try byte()
                value |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 {
                    guard value <= end - index + 1 else { throw Self.truncated }
                    return value
                }
            }
            throw Self.truncated
        }

        mutating func string(byteCount: Int) throws -> String {
            guard byteCount >= 0, byteCount <= end - index else { throw Self.truncated }
            defer { index += byteCount }
            return String(decoding: data[index..<(index + byteCount)], as: UTF8.self)
        }

        static let truncated = HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the head is cut short")
    }
}

/// Why a stored record could not be read by ``HTTPCacheRecordCodec``: the underlying error of the
/// `StorageError.Code.decodingFailed` its storage throws. Any task may use it.
public struct HTTPCacheRecordFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whether the record is whole but in another format (JSON from an earlier version, or a later
    /// format version): ``HTTPCache`` reads it as a miss, without reporting it.
    public var isOtherFormat: Bool
    /// What is wrong, for a person.
    public var reason: String

    /// Creates an error.
    public init(isOtherFormat: Bool, reason: String) {
        self.isOtherFormat = isOtherFormat
        self.reason = reason
    }

    /// One line for a person.
    public var description: String { reason }
}

extension Storage where Value == Data {
    /// Returns a storage of ``HTTPCacheRecord``s kept here in ``HTTPCacheRecordCodec``'s binary
    /// format: the body as it is and a small head, no base64.
    public func httpCacheRecords() -> MappedValuesStorage<Self, HTTPCacheRecord> {
        coded(with: HTTPCacheRecordCodec())
    }
}
