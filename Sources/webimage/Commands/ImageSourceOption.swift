import ArgumentParser
import Foundation
import WebImageCoders

/// An image the server is configured with (the watermark, the fallback image), given as a file
/// path, base64 data or a URL: at most one of them.
enum ImageSourceOption {
    case data(Data)
    case url(URL)

    /// The image `--NAME-path`, `--NAME-data` or `--NAME-url` gives; the bytes of a path or data
    /// are checked to be an image here, so a bad one stops the start (exit 2).
    static func resolve(name: String, path: String?, base64: String?, url: String?) throws -> ImageSourceOption? {
        guard [path, base64, url].compactMap({ $0 }).count <= 1 else {
            throw ValidationError("give one of --\(name)-path, --\(name)-data and --\(name)-url")
        }
        if let url {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? "") else {
                throw ValidationError("--\(name)-url '\(url)' is not an http(s) URL")
            }
            return .url(parsed)
        }
        let data: Data
        let option: String
        if let path {
            option = "--\(name)-path"
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ValidationError("\(option) '\(path)' cannot be read: \(error.localizedDescription)")
            }
        } else if let base64 {
            option = "--\(name)-data"
            let standard = base64.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
            guard let decoded = Data(base64Encoded: padded) else { throw ValidationError("\(option) is not base64") }
            data = decoded
        } else {
            return nil
        }
        guard ImageHeader(data) != nil else { throw ValidationError("\(option): the data is not an image we can read") }
        return .data(data)
    }
}
