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
