/// A query an ``IndexedObjectStoreBackend`` answers from one index: which objects' values meet
/// a condition, in the index's order, at most how many.
///
/// Results are ordered by the index value, then by key, so the same query gives the same order
/// every time. Objects with no value for the index (`nil`) match no condition. Any task may use it.
public struct IndexQuery: Sendable, Hashable {
    /// What an object's index value must meet.
    public enum Condition: Sendable, Hashable {
        /// Every object with a value.
        case any
        /// Equal to the value.
        case equal(IndexValue)
        /// Less than the value.
        case lessThan(IndexValue)
        /// Less than or equal to the value.
        case lessThanOrEqual(IndexValue)
        /// Greater than the value.
        case greaterThan(IndexValue)
        /// Greater than or equal to the value.
        case greaterThanOrEqual(IndexValue)
        /// Between the two values, both included.
        case between(IndexValue, IndexValue)

        /// Whether `value` meets the condition, as the databases decide it; `nil` meets none.
        public func matches(_ value: IndexValue?) -> Bool {
            guard let value else { return false }
            switch self {
            case .any: return true
            case .equal(let bound): return value == bound
            case .lessThan(let bound): return value < bound
            case .lessThanOrEqual(let bound): return value <= bound
            case .greaterThan(let bound): return value > bound
            case .greaterThanOrEqual(let bound): return value >= bound
            case .between(let low, let high): return low <= value && value <= high
            }
        }

        /// The condition as comparisons a value must all pass, for a backend to write in its
        /// query language: `(">=", low)` and `("<=", high)` for ``between(_:_:)``, none for
        /// ``any``. The operators are `=`, `<`, `<=`, `>` and `>=`.
        package var comparisons: [(operator: String, value: IndexValue)] {
            switch self {
            case .any: []
            case .equal(let bound): [("=", bound)]
            case .lessThan(let bound): [("<", bound)]
            case .lessThanOrEqual(let bound): [("<=", bound)]
            case .greaterThan(let bound): [(">", bound)]
            case .greaterThanOrEqual(let bound): [(">=", bound)]
            case .between(let low, let high): [(">=", low), ("<=", high)]
            }
        }
    }

    /// The order of results by index value; ties are always ordered by key, ascending.
    public enum Order: Sendable, Hashable {
        /// Smallest value first.
        case ascending
        /// Largest value first.
        case descending
    }

    /// The name of the index, as declared in ``ObjectIndex/name``.
    public var index: String
    /// What the values must meet.
    public var condition: Condition
    /// The order of the results.
    public var order: Order
    /// The most results; `nil` for all.
    public var limit: Int?

    /// Creates a query on the index `index`.
    public init(_ index: String, _ condition: Condition = .any, order: Order = .ascending, limit: Int? = nil) {
        self.index = index
        self.condition = condition
        self.order = order
        self.limit = limit
    }
}
