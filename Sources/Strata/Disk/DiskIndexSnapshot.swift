import _StrataInternals

/// A saved copy of a disk folder's index, so that opening a large folder need not read every
/// file's header.
///
/// For each value folder it keeps what the folder held when it was saved: the folder's
/// modification time, taken before listing it, and each file's name and inode number, with the
/// key, size, recency and expiry of the files that were values. Opening trusts a folder's part
/// only when the folder has not changed since: the same modification time, not within a second
/// of the save (a change in the same clock tick could leave the time as it was, as git's "racily
/// clean" files), and the same names with the same inodes. Any other folder, and every folder of a
/// snapshot that does not decode, is read file by file as if there were no snapshot. So a stale,
/// damaged or lying snapshot, or files another process wrote since, cost time, never a wrong
/// value: reads check every file they return in any case.
///
/// ```
/// offset  size  field
///      0     4  magic "STRX"
///      4     2  format version (little endian), 1
///      6     2  layout: 2 for the flat layout of 256 folders
///      8     8  when it was saved, seconds since 1970 (IEEE 754 double)
///     16     4  number of folders, then for each:
///                 2 folder number (0-255), 8 + 8 modification time (seconds, nanoseconds),
///                 4 number of files, then for each:
///                   2 name length, name, 8 inode, 1 kind (1 a value, 0 not one),
///                   for a value: 4 key length, key, 8 size, 8 recency, 8 expiry (0 for never)
///    end     4  CRC-32C of everything before it
/// ```
package struct DiskIndexSnapshot: Equatable {
    /// The snapshot's file, at the root of the folder.
    static let fileName = "strata-index.bin"
    static let magic: [UInt8] = Array("STRX".utf8)
    static let formatVersion: UInt16 = 1

    /// A file's entry: its name, its inode, and what it holds when it is a value.
    package struct File: Equatable {
        var name: String
        var inode: UInt64
        var value: Value?
    }

    /// What the index knew of a value's file.
    package struct Value: Equatable {
        var key: String
        var size: Int
        /// Seconds since 1970.
        var touched: Double
        /// Seconds since 1970, or `.infinity`.
        var expiry: Double
    }

    /// A folder's modification time.
    package struct Time: Equatable {
        var seconds: Int64
        var nanoseconds: Int64

        var timeInterval: Double { Double(seconds) + Double(nanoseconds) / 1e9 }
    }

    package struct Folder: Equatable {
        var modified: Time
        /// In the order the folder listed them: an unchanged folder lists them in the same order.
        var files: [File]
    }

    /// Seconds since 1970.
    var saved: Double
    /// By folder number, 0 to 255.
    var folders: [Int: Folder]

    /// Whether the folder listed now as `listing`, modified at `modified`, is as this snapshot
    /// saw it, so its part can be trusted.
    func matches(folder: Int, modified: Time, listing: [(name: String, inode: UInt64)]) -> Bool {
        guard let saved = folders[folder], saved.modified == modified,
            modified.timeInterval < self.saved - 1, saved.files.count == listing.count
        else { return false }
        // An unchanged folder lists the same names in the same order (a folder listed in
        // another order is read again, which costs time but is never wrong).
        return zip(saved.files, listing).allSatisfy { $0.inode == $1.inode && $0.name == $1.name }
    }

    // MARK: Encoding

    func encoded() -> [UInt8] {
        var bytes = Self.magic
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        func append(_ string: String, lengthAs: (Int) -> Void) {
            lengthAs(string.utf8.count)
            bytes.append(contentsOf: string.utf8)
        }
        append(Self.formatVersion)
        append(UInt16(2))
        append(saved.bitPattern)
        append(UInt32(folders.count))
        for (number, folder) in folders.sorted(by: { $0.key < $1.key }) {
            append(UInt16(number))
            append(folder.modified.seconds)
            append(folder.modified.nanoseconds)
            append(UInt32(folder.files.count))
            for file in folder.files {
                append(file.name) { append(UInt16($0)) }
                append(file.inode)
                guard let value = file.value else {
                    append(UInt8(0))
                    continue
                }
                append(UInt8(1))
                append(value.key) { append(UInt32($0)) }
                append(UInt64(value.size))
                append(value.touched.bitPattern)
                append(value.expiry.isFinite ? value.expiry.bitPattern : 0)
            }
        }
        let checksum = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        append(checksum)
        return bytes
    }

    /// Why bytes are not a snapshot this build can use.
    package enum DecodingError: Error, Equatable, CustomStringConvertible {
        case notASnapshot
        case newerFormat(UInt16)
        case otherLayout
        case damaged

        package var description: String {
            switch self {
            case .notASnapshot: "the file is not an index snapshot (wrong magic)"
            case .newerFormat(let version): "the snapshot has format version \(version), newer than this build reads"
            case .otherLayout: "the snapshot is of another folder layout"
            case .damaged: "the snapshot is truncated or damaged (checksum or lengths)"
            }
        }
    }

    /// Decodes a snapshot. Total: any input decodes or throws.
    package static func decode(_ buffer: UnsafeRawBufferPointer) throws(DecodingError) -> DiskIndexSnapshot {
        guard buffer.count >= 4, Array(buffer[0..<4]) == magic else { throw .notASnapshot }
        guard buffer.count >= 24 else { throw .damaged }
        let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: buffer.count - 4, as: UInt32.self))
        let body = UnsafeRawBufferPointer(rebasing: buffer[0..<(buffer.count - 4)])
        let version = UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        guard version <= formatVersion else { throw .newerFormat(version) }
        guard CRC32C.checksum(body) == stored, version >= 1 else { throw .damaged }
        var reader = Reader(buffer: body, offset: 6)
        guard try reader.integer(UInt16.self) == 2 else { throw .otherLayout }
        let saved = Double(bitPattern: try reader.integer(UInt64.self))
        var folders: [Int: Folder] = [:]
        for _ in 0..<(try reader.integer(UInt32.self)) {
            let number = Int(try reader.integer(UInt16.self))
            guard number < 256, folders[number] == nil else { throw .damaged }
            let modified = Time(seconds: try reader.integer(Int64.self), nanoseconds: try reader.integer(Int64.self))
            let count = Int(try reader.integer(UInt32.self))
            // Each file takes at least 11 bytes: a count past what is left is a lie.
            guard count <= reader.remaining / 11 else { throw .damaged }
            var files: [File] = []
            files.reserveCapacity(count)
            for _ in 0..<count {
                let name = try reader.string(length: Int(try reader.integer(UInt16.self)))
                let inode = try reader.integer(UInt64.self)
                var value: Value?
                switch try reader.integer(UInt8.self) {
                case 0:
                    value = nil
                case 1:
                    let key = try reader.string(length: Int(try reader.integer(UInt32.self)))
                    let size = try reader.integer(UInt64.self)
                    let touched = Double(bitPattern: try reader.integer(UInt64.self))
                    let expiryBits = try reader.integer(UInt64.self)
                    guard size <= UInt64(Int.max) else { throw .damaged }
                    value = Value(
                        key: key,
                        size: Int(size),
                        touched: touched,
                        expiry: expiryBits == 0 ? .infinity : Double(bitPattern: expiryBits)
                    )
                default:
                    throw .damaged
                }
                files.append(File(name: name, inode: inode, value: value))
            }
            folders[number] = Folder(modified: modified, files: files)
        }
        guard reader.remaining == 0 else { throw .damaged }
        return DiskIndexSnapshot(saved: saved, folders: folders)
    }

    /// Reads little-endian fields from a buffer, throwing when one would run past its end.
    private struct Reader {
        let buffer: UnsafeRawBufferPointer
        var offset: Int

        var remaining: Int { buffer.count - offset }

        mutating func integer<T: FixedWidthInteger & BitwiseCopyable>(_ type: T.Type) throws(DecodingError) -> T {
            let size = MemoryLayout<T>.size
            guard remaining >= size else { throw .damaged }
            defer { offset += size }
            return T(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
        }

        mutating func string(length: Int) throws(DecodingError) -> String {
            guard length >= 0, remaining >= length else { throw .damaged }
            defer { offset += length }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
            guard let string = String(validatingUTF8Bytes: bytes) else { throw .damaged }
            return string
        }
    }
}
