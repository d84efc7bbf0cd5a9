/// Any JSON document, as a value that is `Sendable`, `Hashable` and `Codable`.
///
/// ```swift
/// let settings: JSONValue = ["theme": "dark", "fontSize": 14, "beta": true]
/// ```
public enum JSONValue: Sendable, Hashable, Codable {
    /// JSON's `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number; JSON does not tell integers from other numbers.
    case number(Double)
    /// A string.
    case string(String)
    /// An array of values.
    case array([JSONValue])
    /// An object: values by name, in no particular order.
    case object([String: JSONValue])

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it stands for.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// Creates ``null`` from `nil`.
    public init(nilLiteral: ()) { self = .null }
    /// Creates a ``bool(_:)`` from a literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates a ``number(_:)`` from an integer literal.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// Creates a ``number(_:)`` from a literal.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// Creates a ``string(_:)`` from a literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates an ``array(_:)`` from a literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Creates an ``object(_:)`` from a literal; a later duplicate name wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
