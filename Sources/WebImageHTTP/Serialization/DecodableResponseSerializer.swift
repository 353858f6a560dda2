import Foundation

/// A type to decode an empty body into (a `204 No Content`, an answer to `HEAD`).
public struct HTTPEmptyResponse: Decodable, Sendable, Hashable {
    public init() {}
}

/// The body decoded as a `Decodable` value with a `JSONDecoder` (Alamofire's
/// `DecodableResponseSerializer`; AFJSONResponseSerializer's role for Swift types).
///
/// Validates like ``JSONResponseSerializer`` (JSON content types by default). An empty body is
/// ``HTTPEmptyResponse`` when `Value` is that type, and otherwise fails with
/// `serializationFailed`. A body that does not match `Value` fails with `serializationFailed`,
/// its message naming the coding path and the cause (`"items[2].id: expected Int, …"`) and its
/// ``HTTPSessionError/underlying`` the `DecodingError` itself. Stateless apart from the decoder, which it never mutates: safe from any thread.
public struct DecodableResponseSerializer<Value: Decodable & Sendable>: ResponseSerializer {
    public var validation: HTTPResponseValidation
    /// Decodes the body; set its strategies (dates, keys) before passing it in.
    public let decoder: JSONDecoder

    /// - Parameters:
    ///   - type: the value's type; inferred from the call site when left out.
    ///   - decoder: a fresh `JSONDecoder` by default.
    ///   - validation: the statuses and content types accepted (JSON's by default).
    public init(
        _ type: Value.Type = Value.self,
        decoder: JSONDecoder = JSONDecoder(),
        validation: HTTPResponseValidation = .init(
            acceptableContentTypes: ["application/json", "text/json", "text/javascript"])
    ) {
        self.decoder = decoder
        self.validation = validation
    }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> Value {
        if data.isEmpty, let empty = HTTPEmptyResponse() as? Value { return empty }
        guard !data.isEmpty else {
            throw failure(response, data, "the body is empty; expected \(Value.self)")
        }
        do {
            return try decoder.decode(Value.self, from: data)
        } catch let error as DecodingError {
            throw failure(response, data, "cannot decode \(Value.self): \(Self.describe(error))", underlying: error)
        } catch {
            throw failure(response, data, "cannot decode \(Value.self): \(error)")
        }
    }

    /// `path: cause` in words, the path in Swift's own spelling (`items[2].id`).
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue, key.stringValue.hasPrefix("Index ") {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text.isEmpty ? "(top level)" : text
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type), \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(type), found null"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

extension ResponseSerializer {
    /// The body decoded as `type` with `decoder`: `session.get(path, serializer: .decodable(User.self))`.
    public static func decodable<Value>(
        _ type: Value.Type,
        decoder: JSONDecoder = JSONDecoder()
    ) -> DecodableResponseSerializer<Value> where Self == DecodableResponseSerializer<Value> {
        DecodableResponseSerializer(type, decoder: decoder)
    }
}
