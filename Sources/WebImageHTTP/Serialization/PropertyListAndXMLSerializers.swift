import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// A property-list value as a `Sendable` tree.
public indirect enum PropertyListValue: Sendable, Hashable {
    case string(String)
    case integer(Int)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    init?(_ object: Any) {
        switch object {
        case let value as String: self = .string(value)
        case let value as Date: self = .date(value)
        case let value as Data: self = .data(value)
        case let value as Bool where JSONValue.isBoolean(object): self = .bool(value)
        case let value as Int: self = .integer(value)
        case let value as Double: self = .real(value)
        case let value as [Any]: self = .array(value.compactMap(PropertyListValue.init))
        case let value as [String: Any]: self = .dictionary(value.compactMapValues(PropertyListValue.init))
        default: return nil
        }
    }

    public subscript(key: String) -> PropertyListValue? {
        if case .dictionary(let members) = self { return members[key] }
        return nil
    }
}

/// The body as a property list (AFPropertyListResponseSerializer): `application/x-plist`.
public struct PropertyListResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation

    public init(validation: HTTPResponseValidation = .init(acceptableContentTypes: ["application/x-plist"])) {
        self.validation = validation
    }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> PropertyListValue {
        do {
            let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            guard let value = PropertyListValue(object) else { throw CocoaError(.propertyListReadCorrupt) }
            return value
        } catch {
            throw failure(response, data, "the body is not a valid property list")
        }
    }
}

/// An XML element as a `Sendable` tree.
public struct XMLElementNode: Sendable, Hashable {
    public var name: String
    public var attributes: [String: String]
    public var children: [XMLElementNode]
    /// The element's own text, whitespace trimmed.
    public var text: String

    /// The first child named `name`.
    public func child(_ name: String) -> XMLElementNode? { children.first { $0.name == name } }
}

/// The body parsed as XML (AFXMLParserResponseSerializer): `application/xml`, `text/xml`.
public struct XMLResponseSerializer: ResponseSerializer {
    public var validation: HTTPResponseValidation

    public init(validation: HTTPResponseValidation = .init(acceptableContentTypes: ["application/xml", "text/xml"])) {
        self.validation = validation
    }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> XMLElementNode {
        let builder = XMLTreeBuilder()
        let parser = XMLParser(data: data)
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else {
            throw failure(
                response,
                data,
                "the body is not well-formed XML: \(parser.parserError?.localizedDescription ?? "no root element")"
            )
        }
        return root
    }
}

/// Builds an element tree from XMLParser's events (used synchronously inside `serialize`).
private final class XMLTreeBuilder: NSObject, XMLParserDelegate {
    var stack: [XMLElementNode] = []
    var root: XMLElementNode?

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        stack.append(XMLElementNode(name: elementName, attributes: attributes, children: [], text: ""))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard var element = stack.popLast() else { return }
        element.text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
    }
}

/// Parameters as a property-list body (`application/x-plist`); GET, HEAD and DELETE use a
/// query string (AFPropertyListRequestSerializer).
public struct PropertyListRequestSerializer: RequestSerializer {
    public var timeout: Duration?
    public var format: PropertyListSerialization.PropertyListFormat

    public init(timeout: Duration? = nil, format: PropertyListSerialization.PropertyListFormat = .xml) {
        self.timeout = timeout
        self.format = format
    }

    public func request(
        method: HTTPRequest.Method,
        url: URL,
        parameters: HTTPParameters?,
        headers: HTTPFields
    )
        throws(HTTPSessionError) -> HTTPSession.Request
    {
        try bodyRequest(
            method: method,
            url: url,
            parameters: parameters,
            headers: headers,
            timeout: timeout,
            contentType: "application/x-plist",
            formatName: "a property list (null is not allowed)"
        ) { object in try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0) }
    }
}

/// Tries serializers in order; the first that accepts the response wins (AFCompoundResponseSerializer).
public struct CompoundResponseSerializer: ResponseSerializer {
    /// What the first accepting serializer produced.
    public enum Value: Sendable {
        case json(JSONValue)
        case xml(XMLElementNode)
        case propertyList(PropertyListValue)
        case string(String)
        case data(Data)
    }

    public var validation: HTTPResponseValidation

    public init(validation: HTTPResponseValidation = .init()) { self.validation = validation }

    public func serialize(_ response: HTTPSession.Response, data: Data) throws(HTTPSessionError) -> Value {
        if let value = try? JSONResponseSerializer().value(for: response, data: data) { return .json(value) }
        if let value = try? XMLResponseSerializer().value(for: response, data: data) { return .xml(value) }
        if let value = try? PropertyListResponseSerializer().value(for: response, data: data) {
            return .propertyList(value)
        }
        if response.mimeType?.hasPrefix("text/") == true,
            let value = try? StringResponseSerializer().value(for: response, data: data)
        {
            return .string(value)
        }
        return .data(data)
    }
}
