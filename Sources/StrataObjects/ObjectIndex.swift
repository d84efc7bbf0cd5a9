package import Foundation
package import Strata

/// A property of `Object` that an indexing backend (an ``IndexedObjectStoreBackend``) keeps
/// beside each record, so queries on it are answered by the database instead of by decoding every
/// object.
///
/// ```swift
/// let indexes: [ObjectIndex<Note>] = [.init("priority", \.priority), .init("title", \.title)]
/// ```
///
/// The backend computes the value when an object is saved. Any task may use it.
public struct ObjectIndex<Object>: Sendable {
    /// The name queries use, such as `"priority"`. Unique among a backend's indexes.
    public let name: String
    private let extract: @Sendable (Object) -> IndexValue?

    /// Creates an index named `name` on the property at `keyPath`.
    public init<Value: IndexableValue>(_ name: String, _ keyPath: any KeyPath<Object, Value> & Sendable) {
        self.name = name
        self.extract = { $0[keyPath: keyPath].indexValue }
    }

    /// Creates an index named `name` on what `value` computes from an object; `nil` leaves the
    /// object out of the index.
    public init(_ name: String, value: @escaping @Sendable (Object) -> IndexValue?) {
        self.name = name
        self.extract = value
    }

    /// The value this index keeps for `object`, or `nil` for none.
    public func value(of object: Object) -> IndexValue? {
        extract(object)
    }
}

extension ObjectIndex {
    /// Throws the error every indexing backend throws when two of `indexes` share a name.
    package static func checkNamesAreUnique(_ indexes: [ObjectIndex], storage: String) throws(StorageError) {
        let names = indexes.map(\.name)
        guard Set(names).count == names.count else {
            throw StorageError(
                .invalidConfiguration,
                storage: storage,
                message: "index names must be unique, got \(names)"
            )
        }
    }

    /// The index of `indexes` named `name`, or the error every indexing backend throws for a
    /// query on an index it does not keep.
    package static func named(
        _ name: String,
        in indexes: [ObjectIndex],
        storage: String
    ) throws(StorageError) -> ObjectIndex {
        guard let index = indexes.first(where: { $0.name == name }) else {
            throw StorageError(
                .invalidConfiguration,
                storage: storage,
                message: "there is no index named '\(name)'; the indexes are \(indexes.map(\.name))"
            )
        }
        return index
    }
}

extension Array {
    /// The values `record` has in each of these indexes, by name, in the order they were declared
    /// (an index with no value for it is left out), or the error every indexing backend throws
    /// for a record that does not decode: it is refused, not stored unindexed.
    package func values<Object: Decodable>(
        of record: Data,
        key: String,
        storage: String
    ) throws(StorageError) -> [(name: String, value: IndexValue)] where Element == ObjectIndex<Object> {
        guard !isEmpty else { return [] }
        let object: Object
        do {
            object = try ObjectCoding<Object>().decode(record).object
        } catch {
            throw StorageError(
                .decodingFailed,
                key: key,
                storage: storage,
                message: "the record does not decode as \(Object.self), so it cannot be indexed; nothing was written",
                underlying: error
            ).carryingUndecodedBytes(of: record)
        }
        return compactMap { index in index.value(of: object).map { (index.name, $0) } }
    }
}
