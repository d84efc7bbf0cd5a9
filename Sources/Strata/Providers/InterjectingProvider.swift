/// A provider that answers some IDs itself before its base is asked.
///
/// Created by ``Provider/interject(_:)``. Any task may use it.
public struct InterjectingProvider<Base: Provider>: Provider {
    /// The type that names a value.
    public typealias ID = Base.ID
    /// The type of the values.
    public typealias Value = Base.Value

    @usableFromInline let base: Base
    @usableFromInline let answer: @Sendable (ID) throws -> Value?

    @inlinable
    init(base: Base, answer: @escaping @Sendable (ID) throws -> Value?) {
        self.base = base
        self.answer = answer
    }

    @inlinable
    func interjected(_ id: ID) throws(StorageError) -> Value? {
        do {
            return try answer(id)
        } catch {
            throw StorageError.wrapping(
                error,
                as: .sourceFailed,
                key: id,
                storage: "InterjectingProvider",
                message: "the interjection failed: \(error)"
            )
        }
    }

    /// The interjected value for `id`, or else the base's.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        if let value = try interjected(id) { return value }
        return try await base.value(for: id)
    }

    /// The interjected value, at once; else the base's immediate answer.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        if let value = try interjected(id) { return .found(value) }
        return try base.immediateValue(for: id)
    }

    /// The interjected values, and the base's for every other ID, asked in one call.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var values: [Value?] = []
        values.reserveCapacity(ids.count)
        var rest: [Int] = []
        for (position, id) in ids.enumerated() {
            let value = try interjected(id)
            if value == nil { rest.append(position) }
            values.append(value)
        }
        if !rest.isEmpty {
            let fetched = try await base.values(for: rest.map { ids[$0] })
            guard fetched.count == rest.count else {
                throw StorageError(
                    .sourceFailed,
                    storage: "InterjectingProvider",
                    message: "the provider below returned \(fetched.count) values for \(rest.count) IDs"
                )
            }
            for (position, value) in zip(rest, fetched) { values[position] = value }
        }
        return values.compactMap { $0 }
    }
}

extension Provider {
    /// Returns a provider that asks `answer` first and its base only for the IDs `answer`
    /// returns `nil` for: placeholders, values known at build time, IDs an app has already
    /// loaded by other means. For many IDs, the base is asked once for all of the rest.
    ///
    /// ```swift
    /// let avatars = download
    ///     .interject { id in id == .anonymous ? Avatar.placeholder : nil }
    ///     .cache(memory)
    ///     .coordinated()
    /// ```
    ///
    /// `answer` runs on the caller's task and must be quick; an error it throws fails the request
    /// with ``StorageError/Code/sourceFailed``.
    @inlinable
    public func interject(_ answer: @escaping @Sendable (ID) throws -> Value?) -> InterjectingProvider<Self> {
        InterjectingProvider(base: self, answer: answer)
    }
}
