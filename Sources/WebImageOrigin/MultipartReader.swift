import Foundation

/// Parses a `multipart/form-data` request the way a server does, for the `/multipart` route.
enum MultipartReader {
    /// JSON: `{"boundary": …, "declaredLength": …, "receivedLength": …, "parts": [{"name", "filename",
    /// "contentType", "size", "text"}]}`, or `{"error": …}`.
    static func describe(_ request: OriginRecordedRequest) -> Data {
        var result: [String: Any] = ["receivedLength": request.body.count]
        result["declaredLength"] = request.header("content-length").flatMap(Int.init) ?? -1
        guard let contentType = request.header("content-type"), contentType.hasPrefix("multipart/form-data"),
            let boundaryRange = contentType.range(of: "boundary=")
        else {
            return json(["error": "not multipart/form-data"])
        }
        let boundary = String(contentType[boundaryRange.upperBound...]).trimmingCharacters(
            in: CharacterSet(charactersIn: "\"")
        )
        result["boundary"] = boundary
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [[String: Any]] = []
        var searchStart = request.body.startIndex
        var sections: [Data] = []
        while let range = request.body.range(of: delimiter, in: searchStart..<request.body.endIndex) {
            if searchStart != request.body.startIndex { sections.append(request.body[searchStart..<range.lowerBound]) }
            searchStart = range.upperBound
        }
        guard request.body[searchStart...].starts(with: Data("--".utf8)) else {
            return json(["error": "no closing boundary"])
        }
        for section in sections {
            // "\r\n" headers "\r\n\r\n" body "\r\n"
            guard let split = section.range(of: Data("\r\n\r\n".utf8)) else {
                return json(["error": "a part has no header end"])
            }
            let headerText = String(decoding: section[section.startIndex..<split.lowerBound], as: UTF8.self)
            var body = section[split.upperBound...]
            guard body.suffix(2) == Data("\r\n".utf8) else { return json(["error": "a part does not end with CRLF"]) }
            body = body.dropLast(2)
            var part: [String: Any] = ["size": body.count]
            for line in headerText.split(separator: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    part["name"] = value(of: "name", in: String(line))
                    if let fileName = value(of: "filename", in: String(line)) { part["filename"] = fileName }
                } else if lower.hasPrefix("content-type:") {
                    part["contentType"] = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                }
            }
            if part["filename"] == nil { part["text"] = String(decoding: body, as: UTF8.self) }
            parts.append(part)
        }
        result["parts"] = parts
        return json(result)
    }

    private static func value(of key: String, in line: String) -> String? {
        guard let range = line.range(of: "; \(key)=\"") else { return nil }
        return line[range.upperBound...].split(separator: "\"", omittingEmptySubsequences: false).first.map(String.init)
    }

    private static func json(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
