import Foundation

/// AFNetworking's query-string rules: keys sorted, nested dictionaries as `a[b]=c`, arrays as
/// `a[]=1&a[]=2`, null as a bare key, and RFC 3986 escaping that leaves `?` and `/` alone.
public enum QueryStringEncoding {
    /// Characters left unescaped: RFC 3986 query characters minus general and sub-delimiters.
    static let allowed: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.remove(charactersIn: ":#[]@!$&'()*+,;=")
        return set
    }()

    /// Percent-escapes `text` for a query component.
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// `key=value` pairs joined with `&`.
    public static func queryString(from parameters: HTTPParameters) -> String {
        pairs(from: .dictionary(parameters), key: nil).map { key, value in
            value.map { "\(escape(key))=\(escape($0))" } ?? escape(key)
        }.joined(separator: "&")
    }

    /// Flattened (key, value) pairs; a `nil` value is a bare key.
    static func pairs(from parameter: HTTPParameter, key: String?) -> [(String, String?)] {
        switch parameter {
        case .dictionary(let values):
            return values.keys.sorted().flatMap { name in
                pairs(from: values[name]!, key: key.map { "\($0)[\(name)]" } ?? name)
            }
        case .array(let values):
            return values.flatMap { pairs(from: $0, key: key.map { "\($0)[]" }) }
        case .null:
            return key.map { [($0, nil)] } ?? []
        default:
            return key.map { [($0, parameter.queryText)] } ?? []
        }
    }
}
