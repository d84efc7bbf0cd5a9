public import Foundation

/// Encodes `Codable` values as property lists.
public struct PropertyListCodec<Value: Codable & Sendable>: Codec {
    /// The format written; binary by default. Either format is read.
    public let format: PropertyListSerialization.PropertyListFormat

    /// Creates a codec writing `format`.
    public init(format: PropertyListSerialization.PropertyListFormat = .binary) {
        self.format = format
    }

    /// Turns `value` into the form the storage keeps.
    public func encode(_ value: Value) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = format
        return try encoder.encode(value)
    }

    /// Turns a stored value back into the value it encodes.
    public func decode(_ encoded: Data) throws -> Value {
        try PropertyListDecoder().decode(Value.self, from: encoded)
    }
}

extension Storage where Value == Data {
    /// Returns a storage of `Codable` values kept here as property lists in `format`.
    @inlinable
    public func propertyList<T: Codable & Sendable>(
        _ type: T.Type,
        format: PropertyListSerialization.PropertyListFormat = .binary
    ) -> MappedValuesStorage<Self, T> {
        coded(with: PropertyListCodec<T>(format: format))
    }
}
