import ArgumentParser
import Foundation
import WebImageCoders

/// `webimage info FILE...`: sniffs and decodes each file and reports what it is.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Sniff and decode image files.",
        discussion: """
            Prints the format, size, frames, loop count, orientation and decode time of each input.
            Exit status: 0 when every input decoded, 1 when any failed, 2 for usage errors.

            Example:
              webimage info --json photo.jpg animation.gif
            """
    )

    @OptionGroup var verbosity: Verbosity

    @Flag(help: "Print one JSON object per input on standard output.")
    var json = false

    @Argument(help: "Image files to inspect.")
    var inputs: [String]

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("give at least one FILE") }
    }

    func run() async throws {
        var failed = false
        for input in inputs {
            let report = ImageInfo.inspect(path: input)
            failed = failed || !report.ok
            if json {
                JSONLineWriter.write(report.json)
            } else {
                StandardStream.line(report.text)
            }
        }
        if failed { throw ItemsFailed() }
    }
}

/// What `info` learns about one input.
struct ImageInfo {
    var input: String
    var ok: Bool
    var format: ImageFormat = .unknown
    var image: DecodedImage?
    var bytes: Int?
    var decodeMilliseconds: Double?
    var error: (code: String, message: String)?

    static func inspect(path input: String) -> ImageInfo {
        var info = ImageInfo(input: input, ok: false)
        let path: String
        if let url = URL(string: input), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            guard scheme == "file" else {
                info.error = (
                    "unsupportedURL",
                    "\(input): info reads local files and file:// URLs; \(scheme) URLs need 'webimage fetch'"
                )
                return info
            }
            path = url.path
        } else {
            path = input
        }
        let data: Data
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            info.error = ("fileNotFound", "\(input): no such file")
            return info
        }
        do {
            guard !isDirectory.boolValue else { throw CocoaError(.fileReadInvalidFileName) }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = isDirectory.boolValue ? "it is a directory" : error.localizedDescription
            info.error = ("fileNotReadable", "\(input): cannot read the file: \(reason)")
            return info
        }
        info.bytes = data.count
        info.format = ImageFormat(sniffing: data)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let image = try ImageCodersManager.shared.decode(data)
            info.decodeMilliseconds = Self.milliseconds(clock.now - start)
            info.image = image
            info.ok = true
        } catch {
            info.decodeMilliseconds = Self.milliseconds(clock.now - start)
            info.error = (error.code, "\(input): \(error)")
        }
        return info
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("input", .string(input)), ("ok", .bool(ok)), ("format", .string(format.rawValue)),
        ]
        if let image {
            fields += [
                ("width", .int(image.width)), ("height", .int(image.height)),
                ("frames", .int(image.sourceFrameCount)), ("loopCount", .int(image.loopCount)),
                ("orientation", .int(image.orientation.rawValue)), ("animated", .bool(image.sourceFrameCount > 1)),
                ("hasAlpha", .bool(image.hasAlpha)),
            ]
        }
        if let bytes { fields.append(("bytes", .int(bytes))) }
        if let decodeMilliseconds { fields.append(("decodeMs", .double(decodeMilliseconds))) }
        if let error {
            fields.append(("error", .object([("code", .string(error.code)), ("message", .string(error.message))])))
        }
        return .object(fields)
    }

    var text: String {
        if let image {
            var line = "\(input): \(format.rawValue) \(image.width)×\(image.height)"
            if image.sourceFrameCount > 1 {
                line +=
                    ", \(image.sourceFrameCount) frames, "
                    + (image.loopCount == 0 ? "loops forever" : "plays \(image.loopCount)×")
            }
            if image.orientation != .up { line += ", orientation \(image.orientation.rawValue)" }
            if image.hasAlpha { line += ", alpha" }
            if let decodeMilliseconds { line += String(format: " (%.1f ms)", decodeMilliseconds) }
            return line
        }
        return "\(input): error: \(error?.message ?? "unknown")"
    }
}
