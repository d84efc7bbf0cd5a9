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
    /// ``magic`` as the four bytes are loaded from memory, for one comparison.
    private static let magicWord = magic.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
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
        // The trailer and the head are read from the record's bytes in place: a byte at a time
        // through `Data`'s subscript costs an exclusivity check per byte.
        var (record, bodyByteCount) = try encoded.withUnsafeBytes { bytes throws(HTTPCacheRecordFormatError) in
            try Self.decodeHead(bytes)
        }
        // The body shares the record's bytes: a slice from the record's own start index,
        // rebased to a fresh Data only when the record was itself a slice.
        let start = encoded.startIndex
        let body = encoded[start..<(start + bodyByteCount)]
        record.body = start == 0 ? body : Data(body)
        return record
    }

    /// Decodes the trailer and the head of the record in `bytes`: a record with an empty body,
    /// for the caller to fill from its own storage, and the body's byte count.
    private static func decodeHead(
        _ bytes: UnsafeRawBufferPointer
    ) throws(HTTPCacheRecordFormatError) -> (HTTPCacheRecord, bodyByteCount: Int) {
        let count = bytes.count
        guard count >= trailerByteCount, bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self) == magicWord
        else {
            if bytes.first == UInt8(ascii: "{") {
                throw HTTPCacheRecordFormatError(isOtherFormat: true, reason: "the record is JSON, an earlier format")
            }
            throw HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the record has no trailer")
        }
        let version = bytes[count - 5]
        guard version == formatVersion else {
            throw HTTPCacheRecordFormatError(
                isOtherFormat: true,
                reason: "the record is in format version \(version); this version reads \(formatVersion)"
            )
        }
        let headByteCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 9, as: UInt32.self)))
        let bodyByteCount = count - trailerByteCount - headByteCount
        guard bodyByteCount >= 0 else {
            throw HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the head is longer than the record")
        }
        var reader = HeadReader(bytes, from: bodyByteCount, to: bodyByteCount + headByteCount)
        let flags = try reader.byte()
        let received = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64()))
        let freshUntil =
            flags & 2 != 0 ? Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64())) : nil
        let entityTag = try reader.optionalString()
        let lastModified = try reader.optionalString()
        let cacheControl = try reader.optionalString()
        let expires = try reader.optionalString()
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
        let record = HTTPCacheRecord(
            body: Data(),
            entityTag: entityTag,
            lastModified: lastModified,
            cacheControl: cacheControl,
            expires: expires,
            received: received,
            freshUntil: freshUntil,
            vary: vary,
            selectingHeaders: selecting,
            listsVariants: flags & 1 != 0
        )
        return (record, bodyByteCount)
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

    /// Reads the head's fields from the record's bytes, failing on any byte past its end.
    private struct HeadReader {
        let bytes: UnsafeRawBufferPointer
        var index: Int
        let end: Int

        init(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
            self.bytes = bytes
            self.index = start
            self.end = end
        }

        var isAtEnd: Bool { index == end }

        mutating func byte() throws(HTTPCacheRecordFormatError) -> UInt8 {
            guard index < end else { throw Self.truncated }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func uint64() throws(HTTPCacheRecordFormatError) -> UInt64 {
            guard end - index >= 8 else { throw Self.truncated }
            defer { index += 8 }
            return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        }

        mutating func varint() throws(HTTPCacheRecordFormatError) -> Int {
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

        mutating func string(byteCount: Int) throws(HTTPCacheRecordFormatError) -> String {
            guard byteCount >= 0, byteCount <= end - index else { throw Self.truncated }
            defer { index += byteCount }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + byteCount)]), as: UTF8.self)
        }

        /// A text written as its byte count plus one, or a zero for none.
        mutating func optionalString() throws(HTTPCacheRecordFormatError) -> String? {
            let length = try varint()
            return length == 0 ? nil : try string(byteCount: length - 1)
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
