import Foundation
import _StrataInternals

/// The binary layout of one value's file: a fixed header, the key, then the payload.
///
/// ```
/// offset  size  field
///      0     4  magic "STRT"
///      4     2  format version (little endian), currently 2
///      6     2  flags, 0
///      8     4  key length in bytes (UTF-8, NFC-normalized)
///     12     4  reserved, 0
///     16     8  payload length in bytes
///     24     8  creation time, seconds since 1970 (IEEE 754 double)
///     32     8  expiry, seconds since 1970, or 0 for never
///     40     8  checksum of the payload: CRC-32C in version 2 (the upper half 0),
///                   xxHash64 in version 1
///     48     8  xxHash64 of bytes 0..<48 followed by the key
///     56     …  key, then payload
/// ```
/// Version 2 changed only the payload's checksum, to one the processor computes in hardware
/// (see ``CRC32C``), so checking a large value costs little next to reading it. Files of version 1 still read; new files are written as version 2.
///
/// Parsing is pure and total: any input either decodes or throws a ``DiskRecordError``. The parsing
/// entry points are `package`, so the `StrataFuzz` target can reach them without `@testable`.
package struct DiskRecordHeader: Equatable {
    static let magic: (UInt8, UInt8, UInt8, UInt8) = (0x53, 0x54, 0x52, 0x54)
    /// The version new files are written in.
    static let formatVersion: UInt16 = 2
    static let fixedSize = 56
    /// Keys longer than this are refused before anything is written.
    static let maximumKeyLength = 1 << 20

    package var key: String
    package var payloadLength: Int
    /// Seconds since 1970.
    var created: Double
    /// Seconds since 1970, or `.infinity` for never.
    var expiry: Double
    var payloadChecksum: UInt64
    /// The format version the header was read in, or is to be written in; it says which
    /// checksum ``payloadChecksum`` is.
    var version: UInt16 = DiskRecordHeader.formatVersion

    /// The payload checksum of format `version`: CRC-32C from version 2, xxHash64 before.
    static func checksum(ofPayload payload: UnsafeRawBufferPointer, version: UInt16 = formatVersion) -> UInt64 {
        version >= 2 ? UInt64(CRC32C.checksum(payload)) : XXHash64.hash(payload)
    }

    /// The payload checksum of `payload` in the current format version.
    static func checksum(ofPayload payload: Data) -> UInt64 {
        payload.withUnsafeBytes { checksum(ofPayload: $0) }
    }

    /// The header's size on disk: the fixed part and the key.
    package var size: Int { Self.fixedSize + key.utf8.count }

    /// Encodes the header (fixed part and key) for a payload described by `payloadLength` and
    /// `payloadChecksum`.
    func encoded() -> [UInt8] {
        let keyBytes = Array(key.utf8)
        var bytes = [UInt8](repeating: 0, count: Self.fixedSize + keyBytes.count)
        bytes.withUnsafeMutableBytes { buffer in
            buffer[0] = Self.magic.0
            buffer[1] = Self.magic.1
            buffer[2] = Self.magic.2
            buffer[3] = Self.magic.3
            buffer.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt16.self)
            buffer.storeBytes(of: UInt32(keyBytes.count).littleEndian, toByteOffset: 8, as: UInt32.self)
            buffer.storeBytes(of: UInt64(payloadLength).littleEndian, toByteOffset: 16, as: UInt64.self)
            buffer.storeBytes(of: created.bitPattern.littleEndian, toByteOffset: 24, as: UInt64.self)
            let expiryBits = expiry.isFinite ? expiry.bitPattern : 0
            buffer.storeBytes(of: expiryBits.littleEndian, toByteOffset: 32, as: UInt64.self)
            buffer.storeBytes(of: payloadChecksum.littleEndian, toByteOffset: 40, as: UInt64.self)
            for (offset, byte) in keyBytes.enumerated() {
                buffer[Self.fixedSize + offset] = byte
            }
            let checksum = Self.headerChecksum(buffer, keyLength: keyBytes.count)
            buffer.storeBytes(of: checksum.littleEndian, toByteOffset: 48, as: UInt64.self)
        }
        return bytes
    }

    private static func headerChecksum(_ buffer: UnsafeRawBufferPointer, keyLength: Int) -> UInt64 {
        let fixed = XXHash64.hash(UnsafeRawBufferPointer(rebasing: buffer[0..<48]))
        let key = UnsafeRawBufferPointer(rebasing: buffer[fixedSize..<(fixedSize + keyLength)])
        return XXHash64.hash(key, seed: fixed)
    }

    private static func headerChecksum(_ buffer: UnsafeMutableRawBufferPointer, keyLength: Int) -> UInt64 {
        headerChecksum(UnsafeRawBufferPointer(buffer), keyLength: keyLength)
    }

    /// The number of bytes needed to decode the header that starts `prefix`, or an error if the
    /// prefix already shows it is not a valid header. `prefix` must hold at least ``fixedSize``
    /// bytes, or the whole file if it is shorter.
    package static func requiredSize(forPrefix prefix: UnsafeRawBufferPointer) throws(DiskRecordError) -> Int {
        guard prefix.count >= fixedSize else { throw .truncated }
        guard prefix[0] == magic.0, prefix[1] == magic.1, prefix[2] == magic.2, prefix[3] == magic.3 else {
            throw .notARecord
        }
        let version = UInt16(littleEndian: prefix.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        guard version <= formatVersion else { throw .newerFormat(version) }
        guard version >= 1 else { throw .damagedHeader }
        let keyLength = Int(UInt32(littleEndian: prefix.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        guard keyLength <= maximumKeyLength else { throw .damagedHeader }
        return fixedSize + keyLength
    }

    /// Decodes the header at the start of `buffer`, which must hold at least
    /// ``requiredSize(forPrefix:)`` bytes. Checks the header's own checksum, not the payload's.
    /// `expectedKey`, when given and the header's key has its bytes, is taken as the key rather
    /// than a string made from them.
    package static func decode(
        _ buffer: UnsafeRawBufferPointer,
        expectedKey: String? = nil
    ) throws(DiskRecordError) -> DiskRecordHeader {
        let size = try requiredSize(forPrefix: buffer)
        guard buffer.count >= size else { throw .truncated }
        let keyLength = size - fixedSize
        let stored = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 48, as: UInt64.self))
        guard stored == headerChecksum(buffer, keyLength: keyLength) else { throw .damagedHeader }
        let keyBytes = UnsafeRawBufferPointer(rebasing: buffer[fixedSize..<size])
        let key: String
        if let expectedKey, expectedKey.hasUTF8(keyBytes) {
            key = expectedKey
        } else if let decoded = String(validatingUTF8Bytes: keyBytes) {
            key = decoded
        } else {
            throw .damagedHeader
        }
        let payloadLength = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        guard payloadLength <= UInt64(Int.max - size) else { throw .damagedHeader }
        let created = Double(
            bitPattern: UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        )
        let expiryBits = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        let checksum = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 40, as: UInt64.self))
        return DiskRecordHeader(
            key: key,
            payloadLength: Int(payloadLength),
            created: created,
            expiry: expiryBits == 0 ? .infinity : Double(bitPattern: expiryBits),
            payloadChecksum: checksum,
            version: UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        )
    }

    /// Decodes a whole file: the header, then checks that the payload has the recorded length and
    /// checksum. Returns the header and the payload's byte range within `file`.
    package static func decodeRecord(
        _ file: UnsafeRawBufferPointer,
        expectedKey: String? = nil
    ) throws(DiskRecordError) -> (DiskRecordHeader, Range<Int>) {
        let header = try decode(file, expectedKey: expectedKey)
        let start = header.size
        guard file.count - start == header.payloadLength else {
            throw file.count - start < header.payloadLength ? .truncated : .trailingBytes
        }
        let payload = UnsafeRawBufferPointer(rebasing: file[start...])
        guard checksum(ofPayload: payload, version: header.version) == header.payloadChecksum else {
            throw .damagedPayload
        }
        return (header, start..<file.count)
    }
}

/// Why a file is not a valid record.
package enum DiskRecordError: Error, Equatable, CustomStringConvertible {
    /// The file ends before its header or payload does.
    case truncated
    /// The file does not start with the record magic: it was not written by Strata.
    case notARecord
    /// The header's checksum, key or lengths are inconsistent.
    case damagedHeader
    /// The payload does not match its checksum.
    case damagedPayload
    /// The file is longer than its header says.
    case trailingBytes
    /// The file was written by a newer format version.
    case newerFormat(UInt16)

    package var description: String {
        switch self {
        case .truncated: "the file is truncated"
        case .notARecord: "the file is not a Strata record (wrong magic)"
        case .damagedHeader: "the header is damaged (checksum, key or length mismatch)"
        case .damagedPayload: "the value does not match its checksum"
        case .trailingBytes: "the file is longer than its header records"
        case .newerFormat(let version): "the file has format version \(version), newer than this build reads"
        }
    }
}
