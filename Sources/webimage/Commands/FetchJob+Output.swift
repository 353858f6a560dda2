import Foundation
import WebImage

/// Where `fetch` writes images and how it names and encodes them.
extension FetchJob {
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
        /// The format to encode to; `nil`: the downloaded bytes, unless `reencodes`; `.unknown`:
        /// `--format best` (``BestFormat``).
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
        /// `--quality auto`: each image at the lowest quality whose DSSIM to the unencoded image
        /// is at most ``autoQualityTarget``.
        var autoQuality = false
        /// The DSSIM `--quality auto` aims at: about what JPEG 85 gives a photo.
        static let autoQualityTarget = 0.015
        /// `--format best`'s candidates (still images; animations are written as WebP).
        static let bestCandidates: [ImageFormat] = [.avif, .webp, .jpeg, .png]

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

    /// Writes the downloaded bytes, or the decoded image re-encoded (a requested format, a
    /// thumbnail, or a memory hit without bytes); returns the file and the image written when
    /// it was re-encoded.
    func write(
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
            var chosen = output.format ?? (coders.encoder(for: image.format) != nil ? image.format : .png)
            let frameCount = image.animation?.frameCount ?? image.frames.count
            if chosen == .unknown, frameCount > 1 { chosen = .webp }  // best, animated
            // Frames decoded on demand stream into the writers that take them one at a time;
            // the others (JPEG XL, the quality search) get them all, as a whole decode gives them.
            if let animation = image.animation, !AnimationEncoder.formats.contains(chosen) || output.autoQuality {
                image = try Self.wholeAnimation(animation)
            }
            // Frames decoded on demand are turned as they are encoded.
            var turn = ImageOrientation.up
            if output.autoOrient, image.orientation != .up {
                if image.animation != nil {
                    turn = image.orientation
                } else {
                    for index in image.frames.indices {
                        image.frames[index].bitmap = image.frames[index].bitmap.applyingOrientation(image.orientation)
                    }
                }
                image.orientation = .up
            }
            if output.strip { image.orientation = .up }
            if frameCount > 1, chosen == .jpeg {
                throw OutputFileError(
                    message: "cannot write an animation of \(frameCount) frames as \(chosen.rawValue): "
                        + "use --format gif, webp, png (APNG) or avif, or --options decode-first-frame-only"
                )
            }
            if let animation = image.animation {
                let decodeLimit = context.maxDecodeDuration
                (bytes, format) = try Self.encode(animation, as: chosen, turning: turn, decodeLimit, output: output)
            } else {
                (bytes, format) = try Self.encode(image, as: chosen, output: output)
            }
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
            // Substituted names never hold a "/" (remoteName), so folders come from the template.
            let last = name.split(separator: "/").last
            guard let last, !name.hasSuffix("/"), last != ".", last != ".." else {
                throw OutputFileError(message: "--output-template gives '\(name)', which names a folder, not a file")
            }
            file = name.hasPrefix("/") ? URL(fileURLWithPath: name) : folder.appendingPathComponent(name)
            if name.contains("/") {
                try OutputFileError.createFolder(file.deletingLastPathComponent())
            }
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

    /// `image` as `format` (`.unknown`: the best of ``OutputSettings/bestCandidates``), at the
    /// quality asked for or chosen (`--quality auto`).
    private static func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        output: OutputSettings
    ) throws(OutputFileError) -> (Data, ImageFormat) {
        let autoQuality = { @Sendable (format: ImageFormat) -> AutoQuality? in
            guard output.autoQuality, [.jpeg, .webp, .avif, .jxl].contains(format) else { return nil }
            return AutoQuality(
                method: .dssim,
                target: OutputSettings.autoQualityTarget,
                range: format == .avif ? 30...90 : 40...95,
                allowedError: OutputSettings.autoQualityTarget / 10
            )
        }
        do throws(CoderError) {
            if format == .unknown {
                let options = output.encoding
                let best = BestFormat(
                    candidates: OutputSettings.bestCandidates,
                    options: { _ in options },
                    autoQuality: autoQuality
                )
                return try best.encode(image)
            }
            if let search = autoQuality(format) {
                let chosen = try ImageCodersManager.shared.encode(
                    image,
                    as: format,
                    options: output.encoding,
                    autoQuality: search
                )
                return (chosen.data, format)
            }
            return (try ImageCodersManager.shared.encode(image, as: format, options: output.encoding), format)
        } catch {
            throw OutputFileError(message: "cannot encode the output: \(error)")
        }
    }

    /// Every frame of an animation decoded on demand, for a writer that takes them together.
    private static func wholeAnimation(_ animation: AnimatedImage) throws(OutputFileError) -> DecodedImage {
        do throws(CoderError) {
            guard let whole = try animation.decodedImage(transformingEachFrame: { $0 }) else {
                throw .corruptData(animation.info.format, "the animation gave no frame")
            }
            return whole
        } catch {
            throw OutputFileError(message: "cannot decode the animation's frames: \(error)")
        }
    }

    /// An animation decoded on demand as `format`, a frame at a time, each frame turned by
    /// `orientation`. The frames are decoded inside the encode, so its time limit is the
    /// decode's (`decodeLimit`) and the encode's together.
    private static func encode(
        _ animation: AnimatedImage,
        as format: ImageFormat,
        turning orientation: ImageOrientation,
        _ decodeLimit: Duration?,
        output: OutputSettings
    ) throws(OutputFileError) -> (Data, ImageFormat) {
        var options = output.encoding
        if let encodeLimit = options.maxEncodeDuration {
            options.maxEncodeDuration = decodeLimit.map { $0 + encodeLimit }
        }
        do throws(CoderError) {
            let data = try animation.encode(as: format, options: options) { frame in
                guard orientation != .up else { return frame }
                return DecodedImage.Frame(
                    bitmap: frame.bitmap.applyingOrientation(orientation),
                    duration: frame.duration
                )
            }
            return (data, format)
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
