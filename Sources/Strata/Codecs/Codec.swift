/// Converts values to and from the form a storage keeps them in, such as `Data`.
///
/// Implement it for your own formats and use it with ``Storage/coded(with:)``. A codec must be
/// safe to use from any task.
///
/// ```swift
/// struct CSVCodec: Codec {
///     func encode(_ row: [String]) throws -> String { row.joined(separator: ",") }
///     func decode(_ line: String) throws -> [String] { line.components(separatedBy: ",") }
/// }
/// let rows = lines.coded(with: CSVCodec())
/// ```
public protocol Codec<Value, Encoded>: Sendable {
    /// The type users read and write.
    associatedtype Value: Sendable
    /// The type the storage keeps.
    associatedtype Encoded: Sendable
    /// Converts `value` into the stored form.
    func encode(_ value: Value) throws -> Encoded
    /// Converts a stored form back into a value.
    func decode(_ encoded: Encoded) throws -> Value
}

extension Storage {
    /// Returns a storage that keeps values through `codec`: encoded on write (failures are
    /// ``StorageError/Code/encodingFailed``), decoded on read (``StorageError/Code/decodingFailed``).
    @inlinable
    public func coded<C: Codec>(with codec: C) -> MappedValuesStorage<Self, C.Value> where C.Encoded == Value {
        MappedValuesStorage(base: self, read: codec.decode, write: codec.encode)
    }
}

extension ReadableStorage {
    /// Returns a read-only storage that decodes values through `codec`.
    @inlinable
    public func coded<C: Codec>(
        with codec: C
    ) -> MappedValuesStorage<ReadOnlyStorage<Self>, C.Value> where C.Encoded == Value {
        mapValues(codec.decode)
    }
}
