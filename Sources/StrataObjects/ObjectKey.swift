import Foundation
public import Strata
import _StrataInternals

/// Converts an object's ID to the string a backend files it under, and back.
///
/// A `UUID` becomes its canonical upper-case form (`6273674B-F271-4521-9B74-F5656A1F815D`), a
/// `String` stays itself, an integer becomes its decimal digits; any other `Codable` ID becomes
/// its JSON text. The conversion is the same on every machine, so a store written by one process
/// is read by another. Any task may use it.
public struct ObjectKeyCoding<ID: Codable & Hashable & Sendable>: Sendable {
    private let encodeID: @Sendable (ID) throws(StorageError) -> String
    private let decodeID: @Sendable (String) throws(StorageError) -> ID

    /// Creates the coding for `ID`.
    public init() {
        if ID.self == UUID.self {
            encodeID = { id throws(StorageError) in (id as? UUID)?.uuidString ?? "" }
            decodeID = { key throws(StorageError) in
                guard let uuid = UUID(uuidString: key), let id = uuid as? ID else {
                    throw Self.notAnID(key)
                }
                return id
            }
        } else if ID.self == String.self {
            encodeID = { id throws(StorageError) in id as? String ?? "" }
            decodeID = { key throws(StorageError) in
                guard let id = key as? ID else { throw Self.notAnID(key) }
                return id
            }
        } else if ID.self == Int.self {
            encodeID = { id throws(StorageError) in (id as? Int).map(String.init) ?? "" }
            decodeID = { key throws(StorageError) in
                guard let id = Int(key) as? ID else { throw Self.notAnID(key) }
                return id
            }
        } else {
            encodeID = { id throws(StorageError) in
                do {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    return String(decoding: try encoder.encode(id), as: UTF8.self)
                } catch {
                    throw StorageError(
                        .invalidKey,
                        key: id,
                        storage: "ObjectStore",
                        message: "the ID could not be encoded as JSON",
                        underlying: error
                    )
                }
            }
            decodeID = { key throws(StorageError) in
                do {
                    return try JSONDecoder().decode(ID.self, from: Data(key.utf8))
                } catch {
                    throw Self.notAnID(key, underlying: error)
                }
            }
        }
    }

    /// The string `id` is filed under.
    public func key(for id: ID) throws(StorageError) -> String {
        try encodeID(id)
    }

    /// The ID filed under `key`.
    public func id(forKey key: String) throws(StorageError) -> ID {
        try decodeID(key)
    }

    private static func notAnID(_ key: String, underlying: (any Error)? = nil) -> StorageError {
        StorageError(
            .decodingFailed,
            key: key,
            storage: "ObjectStore",
            message: "'\(key)' is not the key of a \(ID.self) ID",
            underlying: underlying
        )
    }
}

extension String {
    /// The spelling under which a backend stores this key or attachment name: its NFC form (see
    /// ``storedSpellings``).
    package var storedSpelling: String { nfcNormalized }

    /// The spellings under which a backend holds this key or attachment name, the stored one
    /// first: Unicode's NFC form, so that IDs and names Swift considers equal (`"e\u{301}"` and
    /// `"\u{e9}"`) name one record, as every Strata storage keeps its keys. Then the spellings
    /// an earlier version, which kept them as given, may have filed it under: the text's own bytes
    /// and its NFD form, where they differ from NFC. Only text with non-ASCII characters has more
    /// than one.
    package var storedSpellings: [String] {
        let stored = storedSpelling
        guard utf8.contains(where: { $0 >= 0x80 }) else { return [stored] }
        var spellings = [stored]
        for other in [self, decomposedStringWithCanonicalMapping]
        where !spellings.contains(where: { $0.utf8.elementsEqual(other.utf8) }) {
            spellings.append(other)
        }
        return spellings
    }
}
