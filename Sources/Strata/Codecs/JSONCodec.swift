public import Foundation

/// Encodes `Codable` values as JSON.
public struct JSONCodec<Value: Codable & Sendable>: Codec {
    @usableFromInline let encoder: JSONEncoder
    @usableFromInline let decoder: JSONDecoder

    /// Creates a codec using `encoder` and `decoder`, which must not be changed afterwards.
    public init(encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder()) {
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Turns `value` into the form the storage keeps.
    @inlinable
    public func encode(_ value: Value) throws -> Data {
        try encoder.encode(value)
    }

    /// Turns a stored value back into the value it encodes.
    @inlinable
    public func decode(_ encoded: Data) throws -> Value {
        try decoder.decode(Value.self, from: encoded)
    }
}

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

/// A codec's own failure, kept as a ``StorageError``'s ``StorageError/underlying`` error.
public struct CodecError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String

    /// Creates an error saying `message`.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension Storage where Value == Data {
    /// Returns a storage of `Codable` values kept here as JSON.
    ///
    /// ```swift
    /// let cities = MemoryStorage<String, Data>().json(City.self)
    /// try await cities.set(kharkiv, forKey: "kharkiv")
    /// ```
    @inlinable
    public func json<T: Codable & Sendable>(
        _ type: T.Type,
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder()
    ) -> MappedValuesStorage<Self, T> {
        coded(with: JSONCodec<T>(encoder: encoder, decoder: decoder))
    }

    /// Returns a storage of JSON objects (dictionaries of any JSON values) kept here as JSON.
    @inlinable
    public func jsonDictionary() -> MappedValuesStorage<Self, [String: JSONValue]> {
        coded(with: JSONCodec<[String: JSONValue]>())
    }

    /// Returns a storage of arbitrary JSON documents.
    @inlinable
    public func jsonValue() -> MappedValuesStorage<Self, JSONValue> {
        coded(with: JSONCodec<JSONValue>())
    }

    /// Returns a storage of `Codable` values kept here as property lists in `format`.
    @inlinable
    public func propertyList<T: Codable & Sendable>(
        _ type: T.Type,
        format: PropertyListSerialization.PropertyListFormat = .binary
    ) -> MappedValuesStorage<Self, T> {
        coded(with: PropertyListCodec<T>(format: format))
    }

    /// Returns a storage of strings kept here as bytes in `encoding`.
    @inlinable
    public func string(encoding: String.Encoding = .utf8) -> MappedValuesStorage<Self, String> {
        coded(with: StringCodec(encoding: encoding))
    }
}
