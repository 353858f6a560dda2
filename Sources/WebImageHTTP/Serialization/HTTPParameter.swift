import Foundation

/// A request parameter: a string, number, boolean, null, array or dictionary, nested freely.
///
/// ```swift
/// let parameters: HTTPParameters = ["q": "cats", "page": 2, "filter": ["size": "large"], "ids": [1, 2]]
/// ```
public indirect enum HTTPParameter: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([HTTPParameter])
    case dictionary([String: HTTPParameter])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: HTTPParameter...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, HTTPParameter)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }

    /// The value as JSON-compatible Foundation objects.
    var jsonObject: Any {
        switch self {
        case .string(let value): value
        case .int(let value): value
        case .double(let value): value
        case .bool(let value): value
        case .null: NSNull()
        case .array(let values): values.map(\.jsonObject)
        case .dictionary(let values): values.mapValues(\.jsonObject)
        }
    }

    /// The text of a scalar in a query string (AFNetworking writes booleans as 1/0).
    var queryText: String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        case .bool(let value): value ? "1" : "0"
        case .null, .array, .dictionary: ""
        }
    }
}

/// Top-level request parameters.
public typealias HTTPParameters = [String: HTTPParameter]
