/// A provider from a closure that fetches many IDs in one call: the source at the root of a
/// chain that loads in bulk (a SQL `WHERE id IN (…)`, an endpoint that takes a list of IDs).
///
/// `values(for:)` asks the source for each distinct ID once, in calls of at most
/// ``maximumBatchSize`` IDs made one after another; ``value(for:)`` is a call for one ID. Put
/// ``Provider/cache(_:reporting:logger:)`` and ``Provider/coordinated(logger:metrics:)``
/// after it, and a request for many IDs reaches the source once, for those no cache holds and no
/// other request is fetching:
///
/// ```swift
/// let products = BatchProvider { (ids: [Int]) in try await catalog.products(ids) }
///     .cache(MemoryStorage<Int, Product>(maximumCount: 10_000))
///     .coordinated()
/// let page = try await products.values(for: [7, 12, 40])
/// ```
///
/// Any task may use it; the closure must be safe to call concurrently.
public struct BatchProvider<ID: Hashable & Sendable, Value: Sendable>: Provider {
    @usableFromInline let source: @Sendable ([ID]) async throws -> [ID: Value]
    @usableFromInline let name: String
    /// The most IDs one call to the source is given.
    public let maximumBatchSize: Int

    @inlinable
    init(source: @escaping @Sendable ([ID]) async throws -> [ID: Value], name: String, maximumBatchSize: Int) {
        self.source = source
        self.name = name
        self.maximumBatchSize = maximumBatchSize
    }

    /// Creates a provider that calls `source` with lists of IDs.
    ///
    /// A `maximumBatchSize` of zero or less is a programmer error: the program stops with a
    /// message that names it.
    ///
    /// - Parameters:
    ///   - name: Names the source in errors.
    ///   - maximumBatchSize: The most IDs one call is given; a longer request is split.
    ///   - source: Returns the values of the IDs it is given, by ID. An ID it leaves out fails the
    ///     request with ``StorageError/Code/notFound``; an error it throws (other than a
    ///     ``StorageError``) is wrapped as ``StorageError/Code/sourceFailed``.
    public init(
        name: String = "BatchProvider",
        maximumBatchSize: Int = 1_000,
        _ source: @escaping @Sendable ([ID]) async throws -> [ID: Value]
    ) {
        ConfigurationRule.require(
            maximumBatchSize > 0,
            "maximumBatchSize must be positive, got \(maximumBatchSize)",
            in: name
        )
        self.source = source
        self.name = name
        self.maximumBatchSize = maximumBatchSize
    }

    /// Returns the value for `id`, from a call to the source for it alone.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        let values = try await values(for: [id])
        return values[0]
    }

    /// Returns the values for `ids`, in the same order, asking the source for each distinct ID
    /// once.
    ///
    /// - Throws: ``StorageError/Code/notFound`` naming the first ID the source left out;
    ///   the source's failure as ``StorageError/Code/sourceFailed``;
    ///   ``StorageError/Code/cancelled`` when the task is cancelled.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        var distinct: [ID] = []
        var seen: Set<ID> = []
        for id in ids where seen.insert(id).inserted { distinct.append(id) }
        var found: [ID: Value] = [:]
        found.reserveCapacity(distinct.count)
        var start = 0
        while start < distinct.count {
            let batch = Array(distinct[start..<min(start + maximumBatchSize, distinct.count)])
            let answer: [ID: Value]
            do {
                answer = try await source(batch)
            } catch {
                throw StorageError.wrapping(
                    error,
                    as: .sourceFailed,
                    key: batch.count == 1 ? batch[0] : nil,
                    storage: name,
                    message: "the source failed for \(batch.count) IDs: \(error)"
                )
            }
            for id in batch {
                guard let value = answer[id] else {
                    throw StorageError(
                        .notFound,
                        key: id,
                        storage: name,
                        message: "the source returned no value for this ID"
                    )
                }
                found[id] = value
            }
            start += batch.count
        }
        var values: [Value] = []
        values.reserveCapacity(ids.count)
        for id in ids {
            if let value = found[id] { values.append(value) }
        }
        return values
    }
}
