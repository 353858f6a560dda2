import ArgumentParser
import Foundation
import WebImage
import WebImageCoders

/// `webimage info FILE...`: sniffs and decodes each file and reports what it is.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Sniff and decode image files.",
        discussion: """
            Prints the format, size, frames, loop count, orientation and decode time of each \
            input ("-" reads an image from standard input). When a decode fails (a format with \
            no decoder, such as BMP or TIFF, or damage past the header), the size the header \
            declares is still printed, with "decoded": false. In text mode, failed inputs are \
            reported on standard error.

            \(ExitStatus.summary)

            Example:
              webimage info --json photo.jpg animation.gif
            """
    )

    @OptionGroup var verbosity: Verbosity

    @Flag(help: "Print one JSON object per input on standard output.")
    var json = false

    @Option(
        name: .customLong("max-file-size"),
        help: "Largest file decoded, e.g. 20M or 1G (default 128M; 0: no limit).",
        transform: Units.bytes
    )
    var maxFileSize: Int64?

    @Argument(help: "Image files to inspect.")
    var inputs: [String]

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("give at least one FILE") }
    }

    func run() async throws {
        var failures: [FailureKind?] = []
        let limit = maxFileSize ?? ImageInfo.defaultFileSizeLimit
        for input in inputs {
            let sizeLimit = limit == 0 ? nil : limit
            let report =
                input == "-"
                ? ImageInfo.inspectStandardInput(sizeLimit: sizeLimit)
                : ImageInfo.inspect(path: input, sizeLimit: sizeLimit)
            if !report.ok { failures.append(report.decodeFailed ? .decode : nil) }
            if json {
                JSONLineWriter.write(report.json)
            } else {
                // Failures go to standard error, as every error does in text mode.
                (report.ok ? StandardStream.output : .error).write(report.text + "\n")
            }
        }
        if !failures.isEmpty { throw ItemsFailed(kinds: failures) }
    }
}

extension ImageInfo.Decoded {
    init(_ image: DecodedImage) {
        (width, height, sourceFrameCount) = (image.width, image.height, image.sourceFrameCount)
        (loopCount, orientation, hasAlpha) = (image.loopCount, image.orientation, image.hasAlpha)
    }
}

/// What `info` learns about one input.
struct ImageInfo {
    /// What a decode found: the frame size, the frames, the loop count, the orientation, alpha.
    struct Decoded {
        var width: Int
        var height: Int
        var sourceFrameCount: Int
        var loopCount: Int
        var orientation: ImageOrientation
        var hasAlpha: Bool
    }

    var input: String
    var ok: Bool
    var format: ImageFormat = .unknown
    var image: Decoded?
    /// What the header declares, kept when the decode fails (no decoder for the format, or
    /// damage past the header).
    var header: ImageHeader?
    var bytes: Int?
    var decodeMilliseconds: Double?
    var error: (code: String, message: String)?
    /// The bytes were read but are not an image we can decode.
    var decodeFailed = false

    /// The default `--max-file-size`: the downloader's default `maximumDownloadSize`.
    static let defaultFileSizeLimit: Int64 = ImageDownloader.Configuration().maximumDownloadSize ?? 0

    /// How many leading bytes the format is sniffed from, before the rest is read.
    static let sniffedPrefixSize = 4096

    /// Inspects one file. The format is sniffed from the first bytes, so a large file that is not
    /// an image costs one small read; a file over `sizeLimit` bytes is not read further.
    static func inspect(path input: String, sizeLimit: Int64?) -> ImageInfo {
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
        do throws(RegularFile.Failure) {
            let file = try RegularFile(path: path)
            info.bytes = Int(clamping: file.size)
            let prefix = try file.readPrefix(sniffedPrefixSize)
            info.format = ImageFormat(sniffing: prefix)
            if file.size == 0 || info.format == .unknown {
                let error: CoderError = file.size == 0 ? .emptyData : .unsupportedFormat(.unknown)
                info.error = (error.code, "\(input): \(error)")
                info.decodeFailed = true
                return info
            }
            if let sizeLimit, file.size > sizeLimit {
                info.error = (
                    "fileTooLarge",
                    "\(input): the file is too large: its \(file.size) bytes are over the \(sizeLimit)-byte limit"
                        + " (--max-file-size; 0 lifts it)"
                )
                return info
            }
            data = try file.readAll(after: prefix)
        } catch .system(ENOENT) {
            info.error = ("fileNotFound", "\(input): no such file")
            return info
        } catch .notRegularFile(let kind) {
            let reason = kind == .folder ? "it is a folder" : "it is \(kind), not a regular file"
            info.error = ("fileNotReadable", "\(input): cannot read the file: \(reason)")
            return info
        } catch {
            info.error = ("fileNotReadable", "\(input): cannot read the file: \(error)")
            return info
        }
        return inspect(data, info: info)
    }

    /// Inspects `-`: the bytes on standard input, up to `sizeLimit` (more is `fileTooLarge`,
    /// found without reading past the limit).
    static func inspectStandardInput(sizeLimit: Int64?) -> ImageInfo {
        var info = ImageInfo(input: "-", ok: false)
        var data = Data()
        let chunk = 1 << 16
        while true {
            let piece = FileHandle.standardInput.readData(ofLength: chunk)
            if piece.isEmpty { break }
            data.append(piece)
            if let sizeLimit, Int64(data.count) > sizeLimit {
                info.error = (
                    "fileTooLarge",
                    "-: standard input holds more than the \(sizeLimit)-byte limit (--max-file-size; 0 lifts it)"
                )
                return info
            }
        }
        info.bytes = data.count
        info.format = ImageFormat(sniffing: data)
        guard !data.isEmpty else {
            info.error = (CoderError.emptyData.code, "-: standard input is empty")
            return info
        }
        return inspect(data, info: info)
    }

    /// Decodes `data` (already read) and fills in what it is. An animation too large to hold
    /// whole is decoded a frame at a time (each frame checked, one held at once).
    private static func inspect(_ data: Data, info: ImageInfo) -> ImageInfo {
        var info = info
        let input = info.input
        let clock = ContinuousClock()
        let start = clock.now
        do throws(CoderError) {
            var image = try decodeFrameByFrameIfLarge(data)
            if image == nil { image = Decoded(try ImageCodersManager.shared.decode(data)) }
            info.decodeMilliseconds = Self.milliseconds(clock.now - start)
            info.image = image
            info.ok = true
        } catch {
            info.decodeMilliseconds = Self.milliseconds(clock.now - start)
            info.error = (error.code, "\(input): \(error)")
            info.header = ImageHeader(data)
            info.decodeFailed = true
        }
        return info
    }

    /// Every frame of an animation whose frames together are over the animation memory limit,
    /// decoded in turn (one held at once); `nil` for anything else (the whole decode takes it).
    private static func decodeFrameByFrameIfLarge(_ data: Data) throws(CoderError) -> Decoded? {
        let options = ImageDecodingOptions()
        guard AnimatedImage.canDecode(data), let header = ImageHeader(data), header.frameCount > 1 else { return nil }
        let wholeBytes = header.frameCount.multipliedReportingOverflow(by: header.size.pixelCount * 4)
        guard wholeBytes.overflow || wholeBytes.partialValue > options.maxAnimationBytes else { return nil }
        let animation = try AnimatedImage(data: data, options: options)
        var hasAlpha = false
        for index in 0..<animation.frameCount {
            hasAlpha = try animation.frame(at: index).bitmap.hasAlpha || hasAlpha
        }
        return Decoded(
            width: animation.frameSize.width,
            height: animation.frameSize.height,
            sourceFrameCount: animation.frameCount,
            loopCount: animation.loopCount,
            orientation: animation.info.orientation,
            hasAlpha: hasAlpha
        )
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
                ("hasAlpha", .bool(image.hasAlpha)), ("decoded", .bool(true)),
            ]
        } else if let header {
            fields += [
                ("width", .int(header.size.width)), ("height", .int(header.size.height)),
                ("frames", .int(header.frameCount)), ("animated", .bool(header.frameCount > 1)),
                ("decoded", .bool(false)),
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
        let message = StandardStream.cause(error?.message ?? "unknown", of: input)
        guard let header else { return "\(input): error: \(message)" }
        var line = "\(input): \(format.rawValue) \(header.size.width)×\(header.size.height)"
        if header.frameCount > 1 { line += ", \(header.frameCount) frames" }
        return line + " (from the header; not decoded): error: \(message)"
    }
}
