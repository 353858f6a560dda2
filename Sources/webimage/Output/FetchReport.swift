import Foundation
import WebImage

/// One `fetch` line.
struct FetchReport: Sendable {
    var url: String
    var ok = false
    var cacheType: ImageCacheType = .none
    var format: ImageFormat?
    var width: Int?
    var height: Int?
    var frames: Int?
    var bytes: Int?
    var milliseconds: Double = 0
    var output: String?
    var error: WebImageError?
    /// Why the loaded image could not be written to `--output` (code `outputFailed`).
    var outputError: String?

    /// The exit status kind of a failure.
    var failureKind: FailureKind? { outputError != nil ? .output : error.flatMap(FailureKind.init) }

    mutating func ms(_ duration: Duration) {
        milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// `--early-info`'s line: what a download's first bytes told.
    static func infoJSON(_ header: ImageHeader, url: URL) -> JSONValue {
        .object([
            ("event", .string("info")), ("url", .string(url.absoluteString)),
            ("format", .string(header.format.rawValue)), ("width", .int(header.size.width)),
            ("height", .int(header.size.height)), ("frames", .int(header.frameCount)),
        ])
    }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [("url", .string(url)), ("ok", .bool(ok))]
        if ok {
            fields.append(("cacheType", .string(cacheType == .all ? "memory" : cacheType.rawValue)))
            fields.append(("format", .string((format ?? .unknown).rawValue)))
            if let width { fields.append(("width", .int(width))) }
            if let height { fields.append(("height", .int(height))) }
            if let frames { fields.append(("frames", .int(frames))) }
            if let bytes { fields.append(("bytes", .int(bytes))) }
        }
        fields.append(("ms", .double(milliseconds)))
        if let output { fields.append(("output", .string(output))) }
        if let error { fields.append(("error", Self.errorJSON(error))) }
        if let outputError {
            fields.append(("error", .object([("code", .string("outputFailed")), ("message", .string(outputError))])))
        }
        return .object(fields)
    }

    /// `{code, message, status?, coderCode?}` for an error; `coderCode` is the decoder's
    /// ``CoderError/code``, the code `webimage info` reports for the same file.
    static func errorJSON(_ error: WebImageError) -> JSONValue {
        var details: [(String, JSONValue)] = [
            ("code", .string(error.code.rawValue)), ("message", .string(error.message)),
        ]
        if let status = error.statusCode { details.append(("status", .int(status))) }
        if let coderError = error.coderError { details.append(("coderCode", .string(coderError.code))) }
        return .object(details)
    }

    var text: String {
        guard ok else {
            return "\(url.isEmpty ? "(empty)" : url): error: "
                + StandardStream.cause(outputError ?? error?.message ?? "unknown", of: url.isEmpty ? "(empty)" : url)
        }
        var line = "\(url): \((format ?? .unknown).rawValue) \(width ?? 0)×\(height ?? 0)"
        if let frames, frames > 1 { line += ", \(frames) frames" }
        // Where it came from: the cache, else the loader (a file:// URL is read, not downloaded).
        let loaded = url.lowercased().hasPrefix("file:") ? "file" : "network"
        line += ", \(cacheType == .none ? loaded : cacheType.rawValue)"
        line += String(format: " (%.1f ms)", milliseconds)
        if let output { line += " -> \(output)" }
        return line
    }
}
