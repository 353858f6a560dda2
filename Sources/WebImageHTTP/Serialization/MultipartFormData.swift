import Foundation

/// A `multipart/form-data` body (AFMultipartFormData): text fields, data parts and files.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append("Ada", name: "author")
/// try form.append(fileAt: photoURL, name: "photo")          // file name and type from the URL
/// let (_, reply) = try await session.post("upload", multipart: form, serializer: .json)
/// ```
public struct MultipartFormData: Sendable {
    private struct Part: Sendable {
        var headers: String
        var body: Data
    }

    /// The boundary between parts (random by default; never appears in the parts' headers).
    public let boundary: String
    private var parts: [Part] = []

    public init(boundary: String? = nil) {
        self.boundary =
            boundary ?? "swift-web-image.boundary."
            + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// `multipart/form-data; boundary=…`, for the `Content-Type` header.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// A text field.
    public mutating func append(_ value: String, name: String) {
        parts.append(
            Part(headers: "Content-Disposition: form-data; name=\"\(Self.quoted(name))\"\r\n", body: Data(value.utf8))
        )
    }

    /// A data part; with `fileName` it is sent as a file.
    public mutating func append(_ data: Data, name: String, fileName: String? = nil, mimeType: String? = nil) {
        var headers = "Content-Disposition: form-data; name=\"\(Self.quoted(name))\""
        if let fileName { headers += "; filename=\"\(Self.quoted(fileName))\"" }
        headers += "\r\n"
        if let type = mimeType ?? (fileName != nil ? "application/octet-stream" : nil) {
            headers += "Content-Type: \(type)\r\n"
        }
        parts.append(Part(headers: headers, body: data))
    }

    /// A file part read from `url`; the file name defaults to the URL's last component and the
    /// type to one guessed from its extension.
    /// - Throws: `fileError` when the file cannot be read.
    public mutating func append(
        fileAt url: URL,
        name: String,
        fileName: String? = nil,
        mimeType: String? = nil
    )
        throws(HTTPSessionError)
    {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw HTTPSessionError(
                .fileError,
                url: url,
                message: "\(url.path): cannot read the file for upload: \(error.localizedDescription)"
            )
        }
        append(
            data,
            name: name,
            fileName: fileName ?? url.lastPathComponent,
            mimeType: mimeType ?? Self.mimeType(forExtension: url.pathExtension)
        )
    }

    /// The encoded body.
    public func encoded() -> Data {
        var body = Data()
        for part in parts {
            body.append(Data("--\(boundary)\r\n\(part.headers)\r\n".utf8))
            body.append(part.body)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return body
    }

    /// The encoded body's length in bytes.
    public var contentLength: Int {
        parts.reduce(0) { $0 + "--\(boundary)\r\n\($1.headers)\r\n".utf8.count + $1.body.count + 2 }
            + "--\(boundary)--\r\n".utf8.count
    }

    private static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\r", with: "").replacingOccurrences(of: "\n", with: "")
    }

    static func mimeType(forExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "txt": "text/plain"
        case "json": "application/json"
        case "html", "htm": "text/html"
        default: "application/octet-stream"
        }
    }
}

extension HTTPSession {
    /// POSTs `form` as `multipart/form-data` and serializes the response.
    public func post<Serializer: ResponseSerializer>(
        _ path: String,
        multipart form: MultipartFormData,
        headers: HTTPFields = [:],
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        var request = Request(url: try url(for: path), method: .post, headers: headers, body: .data(form.encoded()))
        request.headers[.contentType] = form.contentType
        let (data, response) = try await data(for: request)
        return (response, try serializer.value(for: response, data: data))
    }
}
