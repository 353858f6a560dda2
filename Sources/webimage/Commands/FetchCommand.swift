import ArgumentParser
import Foundation
import WebImage

/// `webimage fetch URL...`: loads each URL through an ImageManager and reports it.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Load images through the cache and the downloader.",
        discussion: """
            Loads each URL (http, https or file) through ImageManager: memory cache, disk cache, \
            then the network, one network load per URL however often it is given. Lines come out \
            in input order.

            \(ExitStatus.summary)

            Example:
              webimage fetch --json --thumbnail 256x256 --output thumbs --format webp \\
                https://example.com/a.jpg https://example.com/b.png
            """
    )

    @OptionGroup var loading: LoadingOptions

    @Option(
        name: .customLong("input"),
        help: "A file with one URL a line, '-' for standard input (blank lines and # comments are ignored)."
    )
    var inputFile: String?

    @Option(help: "Loads started at once.")
    var concurrency = 8

    @Option(help: "Decode to fit in this box, WxH (e.g. 256x256).")
    var thumbnail: String?

    @Option(
        help: "Write each image into this folder, under its remote name (index-prefixed only where two would collide)."
    )
    var output: String?

    @Option(name: .customShort("o"), help: "Write the image to FILE, '-' for standard output (one input only).")
    var outputFile: String?

    @Flag(name: .customShort("O"), help: "Write each image into the current folder under its remote name (as curl -O).")
    var remoteName = false

    @Option(
        name: .customLong("output-template"),
        help: "File name of each image: %s remote name, %i position (1, 2, …), %x format extension, %% a percent sign."
    )
    var outputTemplate: String?

    @Flag(name: .customLong("no-clobber"), help: "Never overwrite an existing file: that item fails instead.")
    var noClobber = false

    @Option(
        help:
            "Retry an item this many times after a transient failure (network errors, HTTP 408, 429, 5xx), backing off."
    )
    var retry = 0

    @Option(
        name: .customLong("retry-delay"),
        help: "Time between retries, e.g. 2s or 500ms (default: 1 second, doubling each time, at most 30).",
        transform: Units.seconds
    )
    var retryDelay: Double?

    @Option(
        help: """
            Format of written images: png, jpeg, webp, avif or gif (default: the bytes as downloaded; \
            with --thumbnail, the thumbnail in the source's format, or PNG when that cannot be written).
            """
    )
    var format: String?

    @Option(help: "Lossy quality of written JPEG, WebP and AVIF images, 1 to 100 (default 90).")
    var quality: Int?

    @Option(help: "Resize to WxH (after any --crop), as --fit says.")
    var resize: String?

    @Option(
        help:
            "How --resize meets WxH: fit (inside, keeping the aspect ratio), fill (cover, then crop), force (stretch)."
    )
    var fit: String = "fit"

    @Option(help: "Crop to WxH, or WxH+X+Y (offsets from the --gravity anchor, as ImageMagick's -crop).")
    var crop: String?

    @Option(
        help: """
            Anchor of --crop and of --resize with --fit fill: center, north, south, east, west, \
            north-east, north-west, south-east or south-west.
            """
    )
    var gravity: String = "center"

    @Option(help: "Rotate clockwise by 90, 180 or 270 degrees (after resizing).")
    var rotate: Int?

    @Option(help: "Blur with this radius in pixels (last).")
    var blur: Int?

    @Flag(help: "Write no metadata: the image is re-encoded without its EXIF orientation.")
    var strip = false

    @Flag(
        name: .customLong("auto-orient"),
        inversion: .prefixedNo,
        help: "Turn re-encoded images upright by their EXIF orientation (default), or keep the pixels as stored."
    )
    var autoOrient = true

    @Argument(help: "URLs to load.")
    var urls: [String] = []

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1, got \(concurrency)") }
        guard retry >= 0 else { throw ValidationError("--retry must be 0 or more, got \(retry)") }
        if let thumbnail, Self.parseSize(thumbnail) == nil {
            throw ValidationError("--thumbnail '\(thumbnail)' is not WxH with positive numbers")
        }
        if let format, Self.outputFormat(format) == nil {
            throw ValidationError("--format '\(format)' is not one of png, jpeg, webp, avif, gif")
        }
        let writes = output != nil || outputFile != nil || remoteName || outputTemplate != nil
        if format != nil && !writes { throw ValidationError("--format needs --output DIR, -o FILE or -O") }
        if let quality {
            guard (1...100).contains(quality) else {
                throw ValidationError("--quality must be 1 to 100, got \(quality)")
            }
            guard writes else { throw ValidationError("--quality needs --output DIR, -o FILE or -O") }
        }
        if outputFile != nil, output != nil || remoteName || outputTemplate != nil {
            throw ValidationError("-o FILE names one file: it cannot go with --output, -O or --output-template")
        }
        if let outputTemplate, !outputTemplate.contains("%i"), !outputTemplate.contains("%s"), urls.count > 1 {
            throw ValidationError(
                "--output-template '\(outputTemplate)' would give every input the same name: use %s or %i"
            )
        }
        if let outputFile, outputFile != "-", Self.outputFormat(URL(fileURLWithPath: outputFile).pathExtension) == nil,
            format == nil, thumbnail != nil
        {
            throw ValidationError("-o \(outputFile): with --thumbnail, give --format or a file extension such as .png")
        }
        if let resize, Self.parseSize(resize) == nil {
            throw ValidationError("--resize '\(resize)' is not WxH with positive numbers")
        }
        guard Self.resizeMode(fit) != nil else {
            throw ValidationError("--fit '\(fit)' is not one of fit, fill, force")
        }
        if let crop, Self.parseCrop(crop) == nil {
            throw ValidationError("--crop '\(crop)' is not WxH or WxH+X+Y with positive sizes")
        }
        guard ImageGravity(rawValue: gravity.lowercased()) != nil else {
            throw ValidationError(
                "--gravity '\(gravity)' is not one of \(ImageGravity.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        if let rotate, ![0, 90, 180, 270].contains(rotate) {
            throw ValidationError("--rotate must be 90, 180 or 270, got \(rotate)")
        }
        if let blur, !(1...200).contains(blur) { throw ValidationError("--blur must be 1 to 200 pixels, got \(blur)") }
        if transformer != nil || strip, !writes {
            throw ValidationError("--resize, --crop, --rotate, --blur and --strip need --output DIR, -o FILE or -O")
        }
        try LoadingOptions.validateInputFile(inputFile)
        if urls.isEmpty && inputFile == nil { throw ValidationError("give at least one URL or --input FILE") }
    }

    static func parseSize(_ text: String) -> PixelSize? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        return PixelSize(width: width, height: height)
    }

    static func resizeMode(_ name: String) -> ResizeTransformer.Mode? {
        switch name.lowercased() {
        case "fit": .fit
        case "fill": .fill
        case "force": .exact
        default: nil
        }
    }

    /// `WxH` or `WxH+X+Y` (X and Y may be negative: `WxH-10+5`).
    static func parseCrop(_ text: String) -> (size: PixelSize, x: Int, y: Int)? {
        guard let offsetStart = text.firstIndex(where: { $0 == "+" || $0 == "-" }) else {
            return parseSize(text).map { ($0, 0, 0) }
        }
        guard let size = parseSize(String(text[..<offsetStart])) else { return nil }
        var offsets: [Int] = []
        var rest = text[offsetStart...]
        while let sign = rest.first, sign == "+" || sign == "-" {
            let digits = rest.dropFirst().prefix { $0.isNumber }
            guard let value = Int(digits) else { return nil }
            offsets.append(sign == "-" ? -value : value)
            rest = rest.dropFirst(1 + digits.count)
        }
        guard rest.isEmpty, offsets.count == 2 else { return nil }
        return (size, offsets[0], offsets[1])
    }

    /// The image operations, in their fixed order: orient, crop, resize, rotate, blur; `nil`
    /// when none is asked for.
    var transformer: (any ImageTransformer)? {
        let anchor = ImageGravity(rawValue: gravity.lowercased()) ?? .center
        var steps: [any ImageTransformer] = []
        if let (size, x, y) = crop.flatMap(Self.parseCrop) {
            steps.append(CropTransformer(width: size.width, height: size.height, gravity: anchor, x: x, y: y))
        }
        if let size = resize.flatMap(Self.parseSize), let mode = Self.resizeMode(fit) {
            steps.append(ResizeTransformer(size: size, mode: mode, gravity: anchor))
        }
        if let rotate, rotate != 0 { steps.append(RotateTransformer(quarterTurns: rotate / 90)) }
        if let blur { steps.append(BlurTransformer(radius: blur)) }
        guard !steps.isEmpty else { return nil }
        // Crops and sizes are meant as the image is shown: upright first.
        if autoOrient { steps.insert(OrientTransformer(), at: 0) }
        return PipelineTransformer(steps)
    }

    static func outputFormat(_ name: String) -> ImageFormat? {
        switch name.lowercased() {
        case "png": .png
        case "jpeg", "jpg": .jpeg
        case "webp": .webp
        case "avif": .avif
        case "gif": .gif
        default: nil
        }
    }

    /// Where written images go: `-o FILE` or `-o -` (one input), or a folder (`--output DIR`,
    /// `-O` for the current one, `--output-template` inside either).
    func destination(for inputs: [String]) throws -> FetchJob.Destination {
        if let outputFile {
            guard inputs.count == 1 else {
                throw ValidationError(
                    "-o \(outputFile) takes one input, got \(inputs.count): use --output DIR or --output-template"
                )
            }
            return outputFile == "-" ? .standardOutput : .file(URL(fileURLWithPath: outputFile))
        }
        guard output != nil || remoteName || outputTemplate != nil else { return .none }
        let folder = URL(fileURLWithPath: output ?? ".", isDirectory: true)
        // Default names are the remote ones; only names two inputs share get their position.
        var counts: [String: Int] = [:]
        for input in inputs { counts[FetchJob.remoteName(input), default: 0] += 1 }
        let shared = Set(inputs.indices.filter { counts[FetchJob.remoteName(inputs[$0])]! > 1 })
        return .folder(folder, template: outputTemplate, prefixed: outputTemplate == nil ? shared : [])
    }

    func run() async throws {
        let inputs = try LoadingOptions.inputs(urls, listedIn: inputFile)
        let manager = try loading.makeManager(warnsOfLostDiskWrites: true)
        var context = ImageContext()
        context.thumbnailPixelSize = thumbnail.flatMap(Self.parseSize)
        context.transformer = transformer
        let destination = try destination(for: inputs)
        if case .folder(let folder, _, _) = destination {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        // With the image on standard output, result lines go to standard error.
        let results: StandardStream = destination == .standardOutput ? .error : .output
        let fileFormat = outputFile.flatMap { Self.outputFormat(URL(fileURLWithPath: $0).pathExtension) }
        let job = FetchJob(
            manager: manager,
            options: loading.imageOptions,
            context: context,
            destination: destination,
            output: FetchJob.OutputSettings(
                format: format.flatMap(Self.outputFormat) ?? fileFormat,
                encoding: ImageEncodingOptions(quality: Double(quality ?? 90) / 100),
                autoOrient: autoOrient,
                reencodes: thumbnail != nil || transformer != nil || strip,
                strip: strip,
                noClobber: noClobber
            ),
            retries: FetchJob.Retries(count: retry, fixedDelay: retryDelay)
        )
        let bar = ProgressBar(total: inputs.count, requested: loading.showsProgress)
        var failures: [FailureKind?] = []
        try await withThrowingTaskGroup(of: (Int, FetchReport).self) { group in
            var next = 0
            var ready: [Int: FetchReport] = [:]
            var printed = 0
            func launch() {
                guard next < inputs.count else { return }
                let index = next
                let input = inputs[index]
                group.addTask { (index, await job.load(input, index: index, bar: bar)) }
                next += 1
            }
            for _ in 0..<min(concurrency, inputs.count) { launch() }
            while let (index, report) = try await group.next() {
                bar.finish(index, bytes: report.bytes.map(Int64.init))
                ready[index] = report
                bar.printing {
                    while let report = ready.removeValue(forKey: printed) {
                        if !report.ok { failures.append(report.failureKind) }
                        if loading.json {
                            JSONLineWriter.write(report.json, to: results)
                        } else {
                            // Failures go to standard error, as every error does in text mode.
                            if !report.ok {
                                StandardStream.error.write(report.text + "\n")
                            } else if !loading.quiet {
                                results.write(report.text + "\n")
                            }
                        }
                        printed += 1
                    }
                }
                launch()
            }
        }
        bar.close()
        // Queued disk writes would be lost at exit.
        await manager.flush()
        if !failures.isEmpty { throw ItemsFailed(kinds: failures) }
    }
}

/// Loads one input and describes the outcome.
struct FetchJob: Sendable {
    let manager: ImageManager
    let options: ImageOptions
    let context: ImageContext
    let destination: Destination
    let output: OutputSettings
    let retries: Retries
    /// Bytes of images loaded earlier in this run, for memory hits (which carry no bytes).
    private let bytesByURL = Protected<[String: Int]>([:])

    init(
        manager: ImageManager,
        options: ImageOptions,
        context: ImageContext,
        destination: Destination,
        output: OutputSettings,
        retries: Retries = Retries(count: 0, fixedDelay: nil)
    ) {
        self.manager = manager
        self.options = options
        self.context = context
        self.destination = destination
        self.output = output
        self.retries = retries
    }

    /// `--retry` and `--retry-delay`.
    struct Retries: Sendable {
        var count: Int
        /// Seconds between attempts; `nil`: 1 s, doubling, at most 30 s.
        var fixedDelay: Double?

        func delay(beforeAttempt attempt: Int) -> Duration {
            if let fixedDelay { return .milliseconds(Int64(fixedDelay * 1000)) }
            return .seconds(min(30, 1 << min(attempt - 1, 5)))
        }

        /// Failures a later attempt may not repeat: the network, timeouts, and the statuses a
        /// server uses for "not now" (408, 429, 5xx).
        static func isTransient(_ error: WebImageError) -> Bool {
            switch error.code {
            case .networkError: return true
            case .invalidDownloadStatusCode:
                guard let status = error.statusCode else { return false }
                return status == 408 || status == 429 || (500...599).contains(status)
            default: return false
            }
        }
    }

    /// Where written images go.
    enum Destination: Sendable, Equatable {
        /// Nothing is written.
        case none
        /// Into a folder: `template` names the files (`%s.%x` by default), and the inputs at
        /// `prefixed` positions get `%i-` before the name (their remote names collide).
        case folder(URL, template: String?, prefixed: Set<Int>)
        /// One file, named exactly.
        case file(URL)
        /// The image's bytes on standard output.
        case standardOutput
    }

    /// How written images are made.
    struct OutputSettings: Sendable {
        /// The format to encode to; `nil`: the downloaded bytes, unless `reencodes`.
        var format: ImageFormat?
        var encoding: ImageEncodingOptions
        /// Apply the EXIF orientation to the pixels of every re-encoded image.
        var autoOrient: Bool
        /// The decoded image is not the downloaded one (a thumbnail): write it, not the bytes.
        var reencodes: Bool
        /// An existing file is never replaced; the item fails instead.
        var noClobber: Bool
        /// Re-encode without metadata (no EXIF orientation).
        var strip = false

        init(
            format: ImageFormat?,
            encoding: ImageEncodingOptions,
            autoOrient: Bool,
            reencodes: Bool,
            strip: Bool = false,
            noClobber: Bool
        ) {
            self.format = format
            self.encoding = encoding
            self.autoOrient = autoOrient
            self.reencodes = reencodes
            self.strip = strip
            self.noClobber = noClobber
        }
    }

    func load(_ input: String, index: Int, bar: ProgressBar) async -> FetchReport {
        var report = FetchReport(url: input)
        let clock = ContinuousClock()
        let start = clock.now
        guard let url = URL(string: input), !input.isEmpty else {
            report.error = WebImageError.invalidURL(input)
            report.ms(clock.now - start)
            return report
        }
        let result: ImageLoadResult
        var attempt = 0
        while true {
            do {
                // A retry must not be refused as a URL that failed before.
                let options = attempt == 0 ? options : options.union(.retryFailed)
                result = try await manager.loadImage(with: url, options: options, context: context) {
                    received,
                    expected in
                    bar.update(index, received: received, expected: expected)
                }
                break
            } catch {
                if attempt < retries.count, Retries.isTransient(error), !Task.isCancelled {
                    attempt += 1
                    Diagnostics.write(
                        "\(input): warning: \(StandardStream.cause(error.message, of: input)); retry \(attempt) of \(retries.count)"
                    )
                    try? await Task.sleep(for: retries.delay(beforeAttempt: attempt))
                    continue
                }
                report.error = error
                report.ms(clock.now - start)
                return report
            }
        }
        report.ok = true
        report.cacheType = result.cacheType
        if let data = result.data {
            bytesByURL.withLock { $0[input] = data.count }
            report.bytes = data.count
            report.format = ImageFormat(sniffing: data)
        } else {
            report.bytes = bytesByURL.withLock { $0[input] }
            report.format = result.image?.format
        }
        if let image = result.image {
            report.width = image.width
            report.height = image.height
            report.frames = image.frames.count
            report.format = report.format ?? image.format
        }
        if destination != .none {
            do {
                let written = try write(result, input: input, index: index)
                report.output = written.path
                if let image = written.image {
                    // The line describes the file: a re-encoded image's own size, format and frames.
                    report.width = image.width
                    report.height = image.height
                    report.frames = image.frames.count
                    report.format = written.format
                }
            } catch {
                report.ok = false
                report.outputError = "\(input): \(error.message)"
            }
        }
        report.ms(clock.now - start)
        return report
    }

    /// Writes the downloaded bytes, or the decoded image re-encoded (a requested format, a
    /// thumbnail, or a memory hit without bytes); returns the file and the image written when
    /// it was re-encoded.
    private func write(
        _ result: ImageLoadResult,
        input: String,
        index: Int
    ) throws(OutputFileError) -> (path: String, image: DecodedImage?, format: ImageFormat) {
        let bytes: Data
        let format: ImageFormat
        var written: DecodedImage?
        let source = result.data.map { ImageFormat(sniffing: $0) }
        if let data = result.data, output.format == nil || output.format == source, !output.reencodes {
            bytes = data
            format = ImageFormat(sniffing: data)
        } else if var image = result.image {
            let coders = ImageCodersManager.shared
            format = output.format ?? (coders.encoder(for: image.format) != nil ? image.format : .png)
            if output.autoOrient, image.orientation != .up {
                for index in image.frames.indices {
                    image.frames[index].bitmap = image.frames[index].bitmap.applyingOrientation(image.orientation)
                }
                image.orientation = .up
            }
            if output.strip { image.orientation = .up }
            if image.frames.count > 1, format == .png || format == .jpeg {
                throw OutputFileError(
                    message: "cannot write an animation of \(image.frames.count) frames as \(format.rawValue): "
                        + "use --format gif, webp or avif, or --options decode-first-frame-only"
                )
            }
            bytes = try Self.encode(image, as: format, options: output.encoding)
            written = image
        } else {
            throw OutputFileError(message: "nothing to write: the load returned neither bytes nor an image")
        }
        let file: URL
        switch destination {
        case .none: throw OutputFileError(message: "no output was asked for")
        case .standardOutput:
            StandardStream.output.write(bytes)
            return ("-", written, format)
        case .file(let url): file = url
        case .folder(let folder, let template, let prefixed):
            let name = Self.fileName(
                template: template ?? (prefixed.contains(index) ? "%i-%s.%x" : "%s.%x"),
                input: input,
                index: index,
                format: format
            )
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
                throw OutputFileError(message: "--output-template gives the file name '\(name)', which is not one")
            }
            file = folder.appendingPathComponent(name)
        }
        try OutputFileError.writeAtomically(bytes, to: file, replacing: !output.noClobber)
        return (file.path, written, format)
    }

    /// `template` with `%s` (the remote name), `%i` (the input's position from 1), `%x` (the
    /// format's extension) and `%%` replaced.
    static func fileName(template: String, input: String, index: Int, format: ImageFormat) -> String {
        var name = ""
        var characters = template.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                name.append(character)
                continue
            }
            switch characters.next() {
            case "s": name += remoteName(input)
            case "i": name += String(index + 1)
            case "x": name += format.fileExtension
            case "%": name += "%"
            case let other?: name += "%" + String(other)
            case nil: name += "%"
            }
        }
        return name
    }

    private static func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(OutputFileError) -> Data {
        do {
            return try ImageCodersManager.shared.encode(image, as: format, options: options)
        } catch {
            throw OutputFileError(message: "cannot encode the output: \(error)")
        }
    }

    /// The URL's last path component without its extension, letters, digits, `-` and `_`
    /// only (others become `_`); `image` when nothing is left.
    static func remoteName(_ input: String) -> String {
        let last = URL(string: input)?.deletingPathExtension().lastPathComponent ?? "image"
        let cleaned = String(
            last.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" }
        )
        return cleaned.isEmpty || cleaned == "_" ? "image" : String(cleaned.prefix(80))
    }
}

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

    /// `{code, message, status?}` for an error.
    static func errorJSON(_ error: WebImageError) -> JSONValue {
        var details: [(String, JSONValue)] = [
            ("code", .string(error.code.rawValue)), ("message", .string(error.message)),
        ]
        if let status = error.statusCode { details.append(("status", .int(status))) }
        return .object(details)
    }

    var text: String {
        guard ok else {
            return "\(url.isEmpty ? "(empty)" : url): error: "
                + StandardStream.cause(outputError ?? error?.message ?? "unknown", of: url.isEmpty ? "(empty)" : url)
        }
        var line = "\(url): \((format ?? .unknown).rawValue) \(width ?? 0)×\(height ?? 0)"
        if let frames, frames > 1 { line += ", \(frames) frames" }
        line += ", \(cacheType == .none ? "network" : cacheType.rawValue)"
        line += String(format: " (%.1f ms)", milliseconds)
        if let output { line += " -> \(output)" }
        return line
    }
}
