public import Foundation

/// Encodes strings as bytes in a text encoding; bytes that are not valid in it fail to decode.
public struct StringCodec: Codec {
    /// The text encoding used both ways.
    public let encoding: String.Encoding

    /// Creates a codec for `encoding`.
    public init(encoding: String.Encoding = .utf8) {
        self.encoding = encoding
    }

    /// Turns `value` into the form the storage keeps.
    public func encode(_ value: String) throws -> Data {
        guard let data = value.data(using: encoding) else {
            throw CodecError(message: "the string cannot be represented in \(encoding)")
        }
        return data
    }

    /// Turns a stored value back into the value it encodes.
    public func decode(_ encoded: Data) throws -> String {
        guard let string = String(data: encoded, encoding: encoding) else {
            throw CodecError(message: "the bytes are not valid \(encoding)")
        }
        return string
    }
}

extension Storage where Value == Data {
    /// Returns a storage of strings kept here as bytes in `encoding`.
    @inlinable
    public func string(encoding: String.Encoding = .utf8) -> MappedValuesStorage<Self, String> {
        coded(with: StringCodec(encoding: encoding))
    }
}
