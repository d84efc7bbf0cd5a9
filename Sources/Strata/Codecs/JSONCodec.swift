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
}
