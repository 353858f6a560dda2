import Foundation
import WebImageCoders

/// Acceptable status codes and content types (AFHTTPResponseSerializer's validation).
public struct HTTPResponseValidation: Sendable, Hashable {
    /// Default 200–299.
    public var acceptableStatusCodes: Set<Int>
    /// `nil` accepts any content type; otherwise media types such as `image/png` or `image/*`.
    public var acceptableContentTypes: Set<String>?

    public init(acceptableStatusCodes: Set<Int> = Set(200..<300), acceptableContentTypes: Set<String>? = nil) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Throws `unacceptableStatusCode` or `unacceptableContentType`, carrying the response and body.
    public func validate(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) {
        guard acceptableStatusCodes.contains(response.statusCode) else {
            throw HTTPSessionError(
                .unacceptableStatusCode,
                url: response.url,
                message: "\(response.url): unacceptable status \(response.statusCode)",
                response: response,
                body: data
            )
        }
        if let acceptable = acceptableContentTypes, !data.isEmpty {
            let mime = response.mimeType ?? ""
            let family = mime.split(separator: "/").first.map { "\($0)/*" } ?? ""
            guard acceptable.contains(mime) || acceptable.contains(family) else {
                throw HTTPSessionError(
                    .unacceptableContentType,
                    url: response.url,
                    message: "\(response.url): unacceptable content type \(mime.isEmpty ? "(none)" : mime)",
                    response: response,
                    body: data
                )
            }
        }
    }
}

/// Turns a validated response body into a value (AFURLResponseSerialization).
public protocol ResponseSerializer: Sendable {
    associatedtype Value: Sendable
    /// Validation applied before `serialize`.
    var validation: HTTPResponseValidation { get }
    /// The value for `data`; throw to fail the task with `serializationFailed`.
    func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> Value
}

extension ResponseSerializer {
    /// Validates, then serializes.
    public func value(for response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> Value {
        try validation.validate(response, data: data)
        return try serialize(response, data: data)
    }

    func failure(
        _ response: HTTPSession.Response,
        _ data: Data,
        _ reason: String,
        underlying: (any Error & Sendable)? = nil
    ) -> HTTPSessionError {
        HTTPSessionError(
            .serializationFailed,
            url: response.url,
            message: "\(response.url): \(reason)",
            response: response,
            body: data,
            underlying: underlying
        )
    }
}

/// The body as it is.
public struct DataResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation
    public init(validation: HTTPResponseValidation = .init()) { self.validation = validation }
    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> Data { data }
}

/// The body as text in the response's charset (UTF-8 when none is given).
public struct StringResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation
    public init(validation: HTTPResponseValidation = .init()) { self.validation = validation }
    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> String {
        let encoding: String.Encoding =
            switch response.textEncodingName {
            case "iso-8859-1", "latin1": .isoLatin1
            case "us-ascii", "ascii": .ascii
            case "utf-16": .utf16
            default: .utf8
            }
        guard let text = String(data: data, encoding: encoding) else {
            throw failure(response, data, "the body is not valid \(response.textEncodingName ?? "utf-8") text")
        }
        return text
    }
}

/// A JSON value (JSONSerialization objects as a Sendable tree).
public indirect enum JSONValue: Sendable, Hashable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    init(_ object: Any, removingNulls: Bool) {
        switch object {
        case let value as String: self = .string(value)
        case let value as Bool where JSONValue.isBoolean(object): self = .bool(value)
        case let value as NSNumber: self = .number(value.doubleValue)
        case let value as [Any]: self = .array(value.compactMap { Self.convert($0, removingNulls: removingNulls) })
        case let value as [String: Any]:
            self = .object(value.compactMapValues { Self.convert($0, removingNulls: removingNulls) })
        default: self = .null
        }
    }

    private static func convert(_ object: Any, removingNulls: Bool) -> JSONValue? {
        let value = JSONValue(object, removingNulls: removingNulls)
        return removingNulls && value == .null ? nil : value
    }

    /// The member `key` of an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}

extension JSONValue {
    /// JSONSerialization gives booleans as Swift `Bool` on Linux and as a boolean NSNumber on
    /// Darwin; integers 0 and 1 must not count.
    static func isBoolean(_ object: Any) -> Bool {
        if object is NSNumber {
            return String(describing: type(of: object)).lowercased().contains("bool")
        }
        return object is Bool
    }
}

/// The body as JSON (AFJSONResponseSerializer): content types `application/json`,
/// `text/json` and `text/javascript`; `removesNulls` drops null members.
public struct JSONResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation
    public var removesNulls: Bool

    public init(
        validation: HTTPResponseValidation = .init(
            acceptableContentTypes: ["application/json", "text/json", "text/javascript"]),
        removesNulls: Bool = false
    ) {
        self.validation = validation
        self.removesNulls = removesNulls
    }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> JSONValue {
        guard !data.isEmpty else { return .null }
        do {
            let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return JSONValue(object, removingNulls: removesNulls)
        } catch {
            throw failure(response, data, "the body is not valid JSON")
        }
    }
}

/// The body decoded as an image through WebImageCoders (AFImageResponseSerializer).
public struct ImageResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation
    public var coders: ImageCodersManager
    public var options: ImageDecodingOptions

    public init(
        validation: HTTPResponseValidation = .init(acceptableContentTypes: ["image/*", "application/octet-stream"]),
        coders: ImageCodersManager = .shared,
        options: ImageDecodingOptions = .init()
    ) {
        self.validation = validation
        self.coders = coders
        self.options = options
    }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> DecodedImage {
        do {
            return try coders.decode(data, options: options)
        } catch {
            throw failure(response, data, "cannot decode the image: \(error)")
        }
    }
}

extension ResponseSerializer where Self == DataResponseSerializer {
    public static var data: DataResponseSerializer { DataResponseSerializer() }
}

extension ResponseSerializer where Self == StringResponseSerializer {
    public static var string: StringResponseSerializer { StringResponseSerializer() }
}

extension ResponseSerializer where Self == JSONResponseSerializer {
    public static var json: JSONResponseSerializer { JSONResponseSerializer() }
}

extension ResponseSerializer where Self == ImageResponseSerializer {
    public static var image: ImageResponseSerializer { ImageResponseSerializer() }
}
