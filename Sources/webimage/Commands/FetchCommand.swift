import ArgumentParser
import Foundation
import WebImage
@_spi(WebImageInternals) import WebImageCoders

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
              webimage fetch --json --thumbnail 256x256 --output-dir thumbs --format webp \\
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
        name: .customLong("output-dir"),
        help: """
            Write each image into this folder (made as needed), under its remote name (index-prefixed \
            only where two would collide), as curl's --output-dir.
            """
    )
    var outputDirectory: String?

    @Option(
        name: [.customShort("o"), .customLong("output")],
        help: """
            Write the image to FILE, '-' for standard output (one input only, as curl's -o); an existing \
            folder, or a path ending in '/', is taken as --output-dir.
            """
    )
    var outputFile: String?

    @Flag(
        name: [.customShort("O"), .customLong("remote-name")],
        help: "Write each image into the current folder under its remote name (as curl -O)."
    )
    var remoteName = false

    @Option(
        name: .customLong("output-template"),
        help: """
            File name of each image, inside --output-dir DIR unless it starts with /; its folders are made \
            as needed: %s remote name, %i position (1, 2, …), %x format extension, %% a percent sign.
            """
    )
    var outputTemplate: String?

    @Flag(name: .customLong("no-clobber"), help: "Never overwrite an existing file: that item fails instead.")
    var noClobber = false

    @Option(
        help:
            """
            Retry an item this many times after a transient failure (network errors, HTTP 408, 429, 500, 502, 503, \
            504), backing off and honouring Retry-After; a cut download resumes where it stopped when the server allows.
            """
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
            Format of written images: png, jpeg, webp, avif, jxl, gif, or best (the smallest of AVIF, \
            WebP, JPEG and PNG for each image: lossless for flat graphics) (default: the bytes as downloaded; \
            with --thumbnail, the thumbnail in the source's format, or PNG when that cannot be written).
            """
    )
    var format: String?

    @Option(
        help:
            "Lossy quality of written JPEG, WebP, AVIF and JPEG XL images, 1 to 100 (default 90; 100 is lossless JPEG XL), or auto: per image, the lowest whose DSSIM to the unencoded image is at most 0.015."
    )
    var quality: String?

    @Option(help: "Resize to WxH (after any --crop), as --fit says; every frame of an animation.")
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

    @Option(
        help: """
            What to do with an embedded colour profile: srgb (convert to sRGB, relative colorimetric as \
            libvips does; the default), srgb-bpc (the same with black-point compensation), keep (the \
            pixels as stored, the profile written back) or ignore (the numbers as stored, untagged). \
            srgb and ignore given explicitly re-encode written images.
            """
    )
    var color: String?

    @Flag(
        name: .customLong("auto-orient"),
        inversion: .prefixedNo,
        help: "Turn re-encoded images upright by their EXIF orientation (default), or keep the pixels as stored."
    )
    var autoOrient = true

    @Flag(
        name: .customLong("early-info"),
        help: """
            With --json, also write a line {"event":"info",...} for each download as soon as its first bytes tell \
            the image's format, size and frame count, before the body ends (result lines keep input order; info \
            lines come as they are known).
            """
    )
    var earlyInfo = false

    @Argument(help: "URLs to load.")
    var urls: [String] = []

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1, got \(concurrency)") }
        guard retry >= 0 else { throw ValidationError("--retry must be 0 or more, got \(retry)") }
        if earlyInfo && !loading.json { throw ValidationError("--early-info needs --json") }
        if let thumbnail, Self.parseSize(thumbnail) == nil {
            throw ValidationError("--thumbnail '\(thumbnail)' is not WxH with positive numbers")
        }
        if let format, Self.outputFormat(format) == nil {
            throw ValidationError("--format '\(format)' is not one of png, jpeg, webp, avif, jxl, gif, best")
        }
        let writes = outputFolder != nil || singleFile != nil || remoteName || outputTemplate != nil
        if format != nil && !writes { throw ValidationError("--format needs --output-dir DIR, -o FILE or -O") }
        if let color, ColorPolicy(rawValue: color.lowercased()) == nil {
            throw ValidationError("--color '\(color)' is not one of srgb, srgb-bpc, keep, ignore")
        }
        if let quality {
            guard quality == "auto" || Int(quality).map({ (1...100).contains($0) }) == true else {
                throw ValidationError("--quality must be 1 to 100 or auto, got \(quality)")
            }
            guard writes else { throw ValidationError("--quality needs --output-dir DIR, -o FILE or -O") }
        }
        if let singleFile {
            guard outputFolder == nil, !remoteName, outputTemplate == nil else {
                throw ValidationError(
                    "-o/--output \(singleFile) names one file: it cannot go with --output-dir, -O or --output-template"
                )
            }
            if urls.count > 1 { throw Self.oneFileError(singleFile, inputs: urls.count) }
        }
        if let outputTemplate, !outputTemplate.contains("%i"), !outputTemplate.contains("%s"), urls.count > 1 {
            throw ValidationError(
                "--output-template '\(outputTemplate)' would give every input the same name: use %s or %i"
            )
        }
        if let singleFile, singleFile != "-", Self.outputFormat(URL(fileURLWithPath: singleFile).pathExtension) == nil,
            format == nil, thumbnail != nil
        {
            throw ValidationError("-o \(singleFile): with --thumbnail, give --format or a file extension such as .png")
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
            throw ValidationError("--resize, --crop, --rotate, --blur and --strip need --output-dir DIR, -o FILE or -O")
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

    /// The loads' options: --resize and the other operations apply to every frame of an
    /// animation too; an animation re-encoded as it is streams from its frames (decoded on
    /// demand) to the encoder.
    static func imageOptions(
        _ options: ImageOptions,
        transforms: Bool,
        _ output: FetchJob.OutputSettings,
        _ destination: FetchJob.Destination
    ) -> ImageOptions {
        if transforms { return options.union(.transformAnimatedImage) }
        let reencodes = destination != .none && (output.reencodes || output.format != nil)
        return reencodes ? options.union(.decodeFramesOnDemand) : options
    }

    static func outputFormat(_ name: String) -> ImageFormat? {
        switch name.lowercased() {
        case "png": .png
        case "jpeg", "jpg": .jpeg
        case "webp": .webp
        case "avif": .avif
        case "jxl": .jxl
        case "gif": .gif
        case "best": .unknown  // FetchJob.OutputSettings.writesBestFormat
        default: nil
        }
    }

    /// `-o`/`--output`'s file: `nil` when it names a folder (an existing one, or a path ending
    /// in "/", as the design's `--output DIR` has it).
    var singleFile: String? {
        guard let outputFile, !Self.namesFolder(outputFile) else { return nil }
        return outputFile
    }

    /// The folder images are written into: `--output-dir`, or `-o`/`--output` naming a folder.
    var outputFolder: String? {
        outputDirectory ?? outputFile.flatMap { Self.namesFolder($0) ? $0 : nil }
    }

    static func namesFolder(_ path: String) -> Bool {
        guard path != "-" else { return false }
        var isDirectory: ObjCBool = false
        return path.hasSuffix("/")
            || (FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue)
    }

    static func oneFileError(_ file: String, inputs: Int) -> ValidationError {
        ValidationError(
            "-o/--output \(file) names one file and takes one input, got \(inputs): "
                + "use --output-dir DIR (or --output-template) for several"
        )
    }

    /// Where written images go: `-o FILE` or `-o -` (one input), or a folder (`--output-dir`,
    /// `-O` for the current one, `--output-template` inside either).
    func destination(for inputs: [String]) throws -> FetchJob.Destination {
        if let singleFile {
            guard inputs.count == 1 else { throw Self.oneFileError(singleFile, inputs: inputs.count) }
            return singleFile == "-" ? .standardOutput : .file(URL(fileURLWithPath: singleFile))
        }
        guard outputFolder != nil || remoteName || outputTemplate != nil else { return .none }
        let folder = URL(fileURLWithPath: outputFolder ?? ".", isDirectory: true)
        // Default names are the remote ones; only names two inputs share get their position.
        var counts: [String: Int] = [:]
        for input in inputs { counts[FetchJob.remoteName(input), default: 0] += 1 }
        let shared = Set(inputs.indices.filter { counts[FetchJob.remoteName(inputs[$0])]! > 1 })
        return .folder(folder, template: outputTemplate, prefixed: outputTemplate == nil ? shared : [])
    }

    /// What every load of the run decodes to (thumbnail, colour, time limit), its transformer,
    /// and with `--early-info` the line written when a download's first bytes tell the facts.
    private func loadContext(colorPolicy: ColorPolicy?) -> ImageContext {
        var context = ImageContext()
        context.thumbnailPixelSize = thumbnail.flatMap(Self.parseSize)
        context.maxDecodeDuration = .seconds(loading.decodeTimeout)
        context.transformer = transformer
        context.colorPolicy = colorPolicy ?? .convertToSRGB
        if earlyInfo {
            let stream: StandardStream = singleFile == "-" ? .error : .output
            context.imageInfoHandler = { header, url in
                JSONLineWriter.write(FetchReport.infoJSON(header, url: url), to: stream)
            }
        }
        return context
    }

    func run() async throws {
        let inputs = try LoadingOptions.inputs(urls, listedIn: inputFile)
        let retries = FetchJob.Retries(count: retry, fixedDelay: retryDelay)
        let manager = try loading.makeManager(
            warnsOfLostDiskWrites: true,
            retryStrategy: retry > 0 ? retries.strategy : nil
        )
        let colorPolicy = color.flatMap { ColorPolicy(rawValue: $0.lowercased()) }
        let context = loadContext(colorPolicy: colorPolicy)
        let destination = try destination(for: inputs)
        if case .folder(let folder, _, _) = destination {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        // With the image on standard output, result lines go to standard error.
        let results: StandardStream = destination == .standardOutput ? .error : .output
        let fileFormat = singleFile.flatMap { Self.outputFormat(URL(fileURLWithPath: $0).pathExtension) }
            .flatMap { $0 == .unknown ? nil : $0 }
        var output = FetchJob.OutputSettings(
            format: format.flatMap(Self.outputFormat) ?? fileFormat,
            encoding: ImageEncodingOptions(quality: Double(quality.flatMap { Int($0) } ?? 90) / 100),
            autoOrient: autoOrient,
            // Asked-for quality, stripping or colour handling need new bytes; keep is what the
            // downloaded bytes already do.
            reencodes: thumbnail != nil || transformer != nil || strip || quality != nil
                || (colorPolicy != nil && colorPolicy != .keep),
            strip: strip,
            noClobber: noClobber
        )
        output.autoQuality = quality == "auto"
        let job = FetchJob(
            manager: manager,
            options: Self.imageOptions(loading.imageOptions, transforms: transformer != nil, output, destination),
            context: context,
            destination: destination,
            output: output
        )
        let bar = ProgressBar(total: inputs.count, requested: loading.showsProgress)
        let failures = Protected<[FailureKind?]>([])
        // `--concurrency` workers, each loading the next input until none is left; lines come out
        // in input order (see InputOrderQueue).
        let queue = InputOrderQueue<FetchReport>(count: inputs.count)
        let (json, quiet) = (loading.json, loading.quiet)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<min(concurrency, inputs.count) {
                group.addTask {
                    while let index = queue.claim() {
                        let report = await job.load(inputs[index], index: index, bar: bar)
                        bar.finish(index, bytes: report.bytes.map(Int64.init))
                        queue.finish(index, with: report) { reports in
                            let kinds = reports.filter { !$0.ok }.map(\.failureKind)
                            if !kinds.isEmpty { failures.withLock { $0.append(contentsOf: kinds) } }
                            bar.print(reports.compactMap { Self.line(for: $0, json: json, quiet: quiet, results) })
                        }
                    }
                }
            }
        }
        bar.close()
        // Queued disk writes would be lost at exit.
        await manager.flush()
        let failed = failures.withLock { $0 }
        if !failed.isEmpty { throw ItemsFailed(kinds: failed) }
    }

    /// The line `report` prints: its JSON object with `--json`; otherwise failures on standard
    /// error (as every error in text mode) and successes on `results` unless `--quiet`.
    private static func line(
        for report: FetchReport,
        json: Bool,
        quiet: Bool,
        _ results: StandardStream
    ) -> (text: String, stream: StandardStream)? {
        if json { return (report.json.serialized + "\n", results) }
        if !report.ok { return (report.text + "\n", .error) }
        return quiet ? nil : (report.text + "\n", results)
    }
}
