package import Foundation

/// Values stored as JSON behind a header naming their Swift type, for the framework adapters,
/// whose contracts tell a value read as another type from one that is missing (Hummingbird's
/// `PersistError.invalidConversion`, Vapor's `nil`).
///
/// The header is a record separator (`0x1E`, which no JSON text starts with), the type's name as
/// `String(reflecting:)` spells it, and another separator: `␞Swift.Int␞5`. Data without the
/// header (JSON written before the header existed, or by another program) has no type to
/// compare and is decoded by its shape.
package enum TypedJSON {
    /// The byte that opens and closes the header.
    static let separator: UInt8 = 0x1E

    /// What reading stored data as a type found.
    package enum Read<Object> {
        /// The data holds an `Object`.
        case value(Object)
        /// The data holds a value of another type, named here.
        case otherType(String)
    }

    /// `value` as JSON behind its type's header.
    package static func encode<Object: Encodable>(_ value: Object) throws -> Data {
        var data = Data([separator])
        data.append(contentsOf: String(reflecting: Object.self).utf8)
        data.append(separator)
        data.append(try JSONEncoder().encode(value))
        return data
    }

    /// The `Object` in `data`, or the name of the other type it holds.
    ///
    /// - Throws: The decoder's error when the data names `Object` (or nothing) but does not
    ///   decode as one: damaged data, or a type whose shape changed.
    package static func decode<Object: Decodable>(_ type: Object.Type, from data: Data) throws -> Read<Object> {
        guard data.first == separator,
            let end = data.dropFirst().firstIndex(of: separator)
        else {
            return .value(try JSONDecoder().decode(type, from: data))
        }
        let stored = String(decoding: data[data.index(after: data.startIndex)..<end], as: UTF8.self)
        guard stored == String(reflecting: Object.self) else { return .otherType(stored) }
        return .value(try JSONDecoder().decode(type, from: data[data.index(after: end)...]))
    }
}
