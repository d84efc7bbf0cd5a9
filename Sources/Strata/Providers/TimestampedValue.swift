public import Foundation

/// A cached value with the time it was fetched, for stale-while-revalidate caches.
public struct TimestampedValue<Value: Sendable>: Sendable {
    /// The value.
    public var value: Value
    /// When it was fetched from the source.
    public var fetched: Date

    /// Creates a timestamped value.
    public init(value: Value, fetched: Date) {
        self.value = value
        self.fetched = fetched
    }
}

extension TimestampedValue: Codable where Value: Codable {}
extension TimestampedValue: Equatable where Value: Equatable {}
