public import Foundation

/// A value an index keeps for one object: an integer, a real number or a string.
///
/// Values order as SQL databases order them: numbers (integers and reals compared by value)
/// before strings, strings by their UTF-8 bytes. Literals work where a value is expected, as in
/// `.greaterThan(2)` or `.equal("draft")`. Any task may use it.
public enum IndexValue: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// A whole number (integers, `Bool` as 0 or 1).
    case integer(Int64)
    /// A real number (`Double`, `Date` as seconds since 1970).
    case real(Double)
    /// A string (`String`, `UUID` in its canonical form).
    case text(String)

    /// Creates the index value of `value`, or `nil` when it has none (an optional that is `nil`).
    public init?(_ value: some IndexableValue) {
        guard let indexValue = value.indexValue else { return nil }
        self = indexValue
    }

    public static func < (left: IndexValue, right: IndexValue) -> Bool {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): a < b
        case (.integer(let a), .real(let b)): Double(a) < b
        case (.real(let a), .integer(let b)): a < Double(b)
        case (.real(let a), .real(let b)): a < b
        case (.text(let a), .text(let b)): Array(a.utf8).lexicographicallyPrecedes(b.utf8)
        case (.text, _): false
        case (_, .text): true
        }
    }

    public static func == (left: IndexValue, right: IndexValue) -> Bool {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): a == b
        case (.integer(let a), .real(let b)), (.real(let b), .integer(let a)): Double(a) == b
        case (.real(let a), .real(let b)): a == b
        case (.text(let a), .text(let b)): a.utf8.elementsEqual(b.utf8)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .integer(let value): hasher.combine(Double(value))
        case .real(let value): hasher.combine(value)
        case .text(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value.utf8.count)
            for byte in value.utf8 { hasher.combine(byte) }
        }
    }

    public var description: String {
        switch self {
        case .integer(let value): "\(value)"
        case .real(let value): "\(value)"
        case .text(let value): "'\(value)'"
        }
    }
}

extension IndexValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral
{
    /// Creates an integer value.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// Creates a real value.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// Creates a text value.
    public init(stringLiteral value: String) { self = .text(value) }
    /// Creates the integer 1 for `true`, 0 for `false`.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// A property type an ``ObjectIndex`` can index: it has an ``IndexValue``.
public protocol IndexableValue: Sendable {
    /// The value the index keeps, or `nil` for none (the object is then in no result of the
    /// index).
    var indexValue: IndexValue? { get }
}

extension Int: IndexableValue {
    /// The integer.
    public var indexValue: IndexValue? { .integer(Int64(self)) }
}

extension Int64: IndexableValue {
    /// The integer.
    public var indexValue: IndexValue? { .integer(self) }
}

extension Int32: IndexableValue {
    /// The integer.
    public var indexValue: IndexValue? { .integer(Int64(self)) }
}

extension Double: IndexableValue {
    /// The number; `nil` for NaN, which no query can match.
    public var indexValue: IndexValue? { isNaN ? nil : .real(self) }
}

extension Bool: IndexableValue {
    /// 1 for `true`, 0 for `false`.
    public var indexValue: IndexValue? { .integer(self ? 1 : 0) }
}

extension String: IndexableValue {
    /// The string.
    public var indexValue: IndexValue? { .text(self) }
}

extension Date: IndexableValue {
    /// Seconds since 1970.
    public var indexValue: IndexValue? { .real(timeIntervalSince1970) }
}

extension UUID: IndexableValue {
    /// The canonical upper-case string.
    public var indexValue: IndexValue? { .text(uuidString) }
}

extension Optional: IndexableValue where Wrapped: IndexableValue {
    /// The wrapped value's, or `nil`.
    public var indexValue: IndexValue? { self?.indexValue }
}
