import Foundation
import WebImageCoders

/// How imgproxy's resizing types meet the requested size.
public enum ResizingType: String, Sendable, Hashable, CaseIterable {
    /// Inside the box, keeping the aspect ratio (the default).
    case fit
    /// Covering the box, keeping the aspect ratio, then cropped to it.
    case fill
    /// As `fill`, but when the image is smaller than the box the crop keeps the box's aspect
    /// ratio at the image's scale instead of the box's size.
    case fillDown = "fill-down"
    /// Exactly the box, ignoring the aspect ratio.
    case force
    /// `fill` when the image and the box have the same orientation, else `fit`.
    case auto
}

/// Where a crop keeps its window, as imgproxy names it.
public enum ProxyGravity: Sendable, Hashable {
    case north, south, east, west, northEast, northWest, southEast, southWest, center
    /// A focus point, each coordinate 0…1 of the image's size.
    case focusPoint(x: Double, y: Double)
    /// Content-aware.
    case smart

    static let names: [String: ProxyGravity] = [
        "no": .north, "so": .south, "ea": .east, "we": .west, "noea": .northEast, "nowe": .northWest,
        "soea": .southEast, "sowe": .southWest, "ce": .center, "sm": .smart,
    ]
}

/// imgproxy's gravity offsets: a magnitude of 1 or more is pixels (times the device pixel ratio
/// in the result crop and `extend`), less than 1 a share of the outer side. They move the window
/// away from the gravity's edge (inwards from east and south), and along the axis for centre.
public struct GravityOffset: Sendable, Hashable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(x: Double = 0, y: Double = 0) {
        self.x = x
        self.y = y
    }

    public var description: String { "\(x):\(y)" }
}

/// `padding`'s four sides, in pixels before `dpr`.
public struct Padding: Sendable, Hashable, CustomStringConvertible {
    public var top = 0
    public var right = 0
    public var bottom = 0
    public var left = 0

    public init(top: Int = 0, right: Int = 0, bottom: Int = 0, left: Int = 0) {
        self.top = top
        self.right = right
        self.bottom = bottom
        self.left = left
    }

    public var isEmpty: Bool { top == 0 && right == 0 && bottom == 0 && left == 0 }
    public var description: String { "\(top):\(right):\(bottom):\(left)" }
}

/// The processing a proxy URL asks for, after presets, with imgproxy's defaults.
public struct ProcessingOptions: Sendable, Hashable {
    public var resizingType: ResizingType = .fit
    /// 0: from the other side and the aspect ratio (both 0: the source's size).
    public var width = 0
    public var height = 0
    /// Device pixel ratio, any positive number: the result is `dpr` times the size (bounded by
    /// the result limits).
    public var dpr: Double = 1
    /// `zoom:X[:Y]`: multiplies the resize and the box, after the resizing type.
    public var zoomWidth: Double = 1
    public var zoomHeight: Double = 1
    /// `min-width`/`min-height`: the resized image is at least this big on that side (pixels
    /// before `dpr`), cropping the other requested side; 0: none.
    public var minWidth = 0
    public var minHeight = 0
    /// Upscale images smaller than the box. Default off.
    public var enlarge = false
    /// Pad the result to the box when it is smaller. Default off.
    public var extend = false
    public var gravity: ProxyGravity = .center
    /// `g:TYPE:X:Y`'s offsets (for the result crop, and the source crop without a gravity of its own).
    public var gravityOffset = GravityOffset()
    /// A crop of the source before resizing: sizes in pixels (≥ 1) or fractions (< 1) of the
    /// source; 0 keeps that side.
    public var crop: (width: Double, height: Double, gravity: ProxyGravity?)? {
        get { cropWidth == 0 && cropHeight == 0 ? nil : (cropWidth, cropHeight, cropGravity) }
        set {
            cropWidth = newValue?.width ?? 0
            cropHeight = newValue?.height ?? 0
            cropGravity = newValue?.gravity
        }
    }
    /// `c:W:H:TYPE:X:Y`'s offsets.
    public var cropGravityOffset = GravityOffset()
    /// Where `extend` places the image on the box (`ex:1:TYPE:X:Y`, `rs`'s and `s`'s arguments
    /// after extend); focus point allowed, smart not.
    public var extendGravity: ProxyGravity = .center
    public var extendGravityOffset = GravityOffset()
    private var cropWidth: Double = 0
    private var cropHeight: Double = 0
    private var cropGravity: ProxyGravity?
    /// 1…100; `nil`: the server's default.
    public var quality: Int?
    /// `format:best`: the smallest of the candidate formats (``BestFormatSettings``).
    public var bestFormat = false
    /// The output format; `nil`: the URL's extension, negotiation or the source's format.
    public var format: ImageFormat?
    /// Fills transparency (and extended areas) when set.
    public var background: RGBA?
    /// Gaussian blur sigma; 0: none.
    public var blur: Double = 0
    /// Sharpen sigma; 0: none.
    public var sharpen: Double = 0
    /// Extra clockwise rotation: 0, 90, 180 or 270 (any multiple of 90 in the URL, reduced).
    public var rotate = 0
    /// `flip:H:V`: mirror left to right and top to bottom, after rotating.
    public var flipHorizontal = false
    public var flipVertical = false
    /// `padding:T:R:B:L`: bands of the background around the result, in pixels before `dpr`.
    public var padding = Padding()
    /// `trim:THRESHOLD:COLOR:EQUAL_HOR:EQUAL_VER`: cut the border off the source first (still
    /// images; animations are not trimmed, as in imgproxy). `nil`: none.
    public var trim: Trim?
    /// `watermark:OPACITY:POSITION:X:Y:SCALE`: the server's watermark image over the result;
    /// `nil` (or opacity 0): none.
    public var watermark: WatermarkOptions?
    /// `pixelate:SIZE`: blocks of SIZE pixels (0 or 1: none).
    public var pixelate = 0
    /// `extend_aspect_ratio:1[:GRAVITY:X:Y]`: pad the result to the box's aspect ratio.
    public var extendAspectRatio = false
    public var extendAspectRatioGravity: ProxyGravity = .center
    public var extendAspectRatioGravityOffset = GravityOffset()
    /// `format_quality:FORMAT:Q:…`: the quality for results in that format when `quality` is
    /// not given.
    public var formatQuality: [ImageFormat: Int] = [:]
    /// `expires:UNIX`: the moment the URL stops working (checked when it is parsed).
    public var expires: Int?
    /// `filename:NAME[:BASE64]`: the name in `Content-Disposition` (the source's by default).
    public var filename: String?
    /// `return_attachment`: `Content-Disposition: attachment` instead of `inline`.
    public var returnAttachment = false
    /// `max_bytes`: JPEG, WebP, AVIF and JPEG XL results are encoded at lower qualities until
    /// they fit (down to quality 10); 0: no limit.
    public var maxBytes = 0
    /// `autoquality|aq:METHOD:TARGET:MIN:MAX:ALLOWED_ERROR`: the quality chosen per image
    /// (``AutoQualitySettings``); `nil`: the server's setting.
    public var autoQuality: AutoQualityOption?
    /// `skip_processing:FMT:…`: sources in these formats are sent as they are, unless another
    /// output format is asked for.
    public var skipProcessing: Set<ImageFormat> = []
    /// `raw`: the source is sent as it is (after the source checks).
    public var raw = false
    /// `enforce_thumbnail`: decode the source's embedded thumbnail (HEIF) instead of the image,
    /// and plan sizes on it; sources without one are used whole, as in imgproxy. Default off.
    public var enforceThumbnail = false
    /// Apply the EXIF orientation. Default on.
    public var autoRotate = true
    /// Write no metadata (EXIF) but what ``keepCopyright`` keeps (imgproxy's `strip_metadata`).
    /// Default on.
    public var stripMetadata = true
    /// When stripping metadata, keep the EXIF Artist and Copyright (imgproxy's `keep_copyright`).
    /// Default on.
    public var keepCopyright = true
    /// Convert an embedded colour profile's pixels to sRGB and write them untagged; off: keep the
    /// pixels as stored and write the profile (imgproxy's `strip_color_profile`). Default on.
    public var stripColorProfile = true
    /// Changes the URL (and so caches) without changing the image.
    public var cacheBuster = ""

    public init() {}

    /// The options `options` set over `base` (the server's defaults), presets expanded
    /// (`default` first when it exists), later options overriding earlier ones. With `onlyPresets`, every option must be
    /// a preset (`pr:NAME` or a bare preset name, as imgproxy's only-presets mode).
    /// - Throws: ``ProxyError`` 400 naming the option and what is wrong with its arguments.
    public init(
        _ options: [ProxyOption],
        presets: [String: [ProxyOption]] = [:],
        onlyPresets: Bool = false,
        base: ProcessingOptions = ProcessingOptions()
    ) throws(ProxyError) {
        self = base
        if let defaults = presets["default"] { try apply(defaults, presets: presets, depth: 1) }
        if onlyPresets {
            for option in options where !["pr", "preset"].contains(option.name) {
                throw .badOption("only presets are allowed here (pr:NAME), not '\(option.name)'")
            }
        }
        try apply(options, presets: presets, depth: 0)
        if let format, !ProcessingOptions.outputFormats.contains(format) {
            throw .badOption(
                "format '\(format.rawValue)' cannot be written (png, jpeg, webp, avif, jxl, gif, bmp, ico, tiff)"
            )
        }
    }

    /// The formats a result can be written in.
    public static let outputFormats: Set<ImageFormat> = [.png, .jpeg, .webp, .avif, .jxl, .gif, .bmp, .ico, .tiff]

    /// The output format an extension or `f:` value names; `nil` for anything else.
    public static func format(named name: String) -> ImageFormat? {
        switch name.lowercased() {
        case "jpg", "jpeg": .jpeg
        case "png": .png
        case "webp": .webp
        case "avif": .avif
        case "gif": .gif
        case "svg": .svg
        case "heic": .heic
        case "tiff", "tif": .tiff
        case "bmp": .bmp
        case "ico": .ico
        case "jxl": .jxl
        default: nil
        }
    }

    private mutating func apply(
        _ options: [ProxyOption],
        presets: [String: [ProxyOption]],
        depth: Int
    )
        throws(ProxyError)
    {
        for option in options { try apply(option, presets: presets, depth: depth) }
    }

    // Layout and delivery options live in `applyLayoutOrDelivery` (ProcessingOptions+Layout.swift).
    // shape: one flat dispatch over imgproxy's option names, a few lines each.
    private mutating func apply(
        _ option: ProxyOption,
        presets: [String: [ProxyOption]],
        depth: Int
    )
        throws(ProxyError)
    {
        let arguments = ArgumentReader(option: option)
        switch option.name {
        case "resize", "rs":
            try arguments.expect(1...8)
            if let type = try arguments.resizingType(0) { resizingType = type }
            try applySize(arguments, from: 1)
        case "size", "s":
            try arguments.expect(1...7)
            try applySize(arguments, from: 0)
        case "resizing_type", "rt":
            try arguments.expect(1...1)
            if let type = try arguments.resizingType(0) { resizingType = type }
        case "width", "w":
            try arguments.expect(1...1)
            width = try arguments.size(0) ?? width
        case "height", "h":
            try arguments.expect(1...1)
            height = try arguments.size(0) ?? height
        case "dpr":
            try arguments.expect(1...1)
            guard let value = try arguments.number(0), value > 0, value.isFinite else {
                throw .badOption("dpr:\(option.arguments[0]): must be a positive number")
            }
            dpr = value
        case "enlarge", "el":
            try arguments.expect(1...1)
            enlarge = try arguments.bool(0) ?? enlarge
        case "extend", "ex":
            try arguments.expect(1...4)
            try applyExtend(arguments, from: 0)
        case "gravity", "g":
            try arguments.expect(1...3)
            (gravity, gravityOffset) = try arguments.gravity(from: 0)
        case "crop", "c":
            try arguments.expect(2...5)
            let cropWidth = try arguments.number(0) ?? 0
            let cropHeight = try arguments.number(1) ?? 0
            guard cropWidth >= 0, cropHeight >= 0 else { throw .badOption("crop sizes must not be negative") }
            let placed = option.arguments.count > 2 ? try arguments.gravity(from: 2) : nil
            crop = (cropWidth, cropHeight, placed?.gravity)
            cropGravityOffset = placed?.offset ?? GravityOffset()
        case "quality", "q":
            try arguments.expect(1...1)
            guard let value = try arguments.integer(0), (0...100).contains(value) else {
                throw .badOption("quality:\(option.arguments[0]): must be 0 to 100 (0: the default)")
            }
            quality = value == 0 ? nil : value
        case "format", "f", "ext":
            try arguments.expect(1...1)
            if option.arguments[0].lowercased() == "best" {
                (bestFormat, format) = (true, nil)
                return
            }
            guard let named = ProcessingOptions.format(named: option.arguments[0]) else {
                throw .badOption(
                    "format '\(option.arguments[0])' is not one of png, jpeg, webp, avif, jxl, gif, bmp, ico, tiff, best"
                )
            }
            (bestFormat, format) = (false, named)
        case "background", "bg":
            try arguments.expect(1...3)
            background = try arguments.color()
        case "blur", "bl":
            try arguments.expect(1...1)
            guard let value = try arguments.number(0), value >= 0, value <= 100 else {
                throw .badOption("blur:\(option.arguments[0]): must be a sigma from 0 to 100")
            }
            blur = value
        case "sharpen", "sh":
            try arguments.expect(1...1)
            guard let value = try arguments.number(0), value >= 0, value <= 100 else {
                throw .badOption("sharpen:\(option.arguments[0]): must be a sigma from 0 to 100")
            }
            sharpen = value
        case "rotate", "rot":
            try arguments.expect(1...1)
            guard let value = try arguments.integer(0), value % 90 == 0 else {
                throw .badOption("rotate:\(option.arguments[0]): must be a multiple of 90")
            }
            rotate = (value % 360 + 360) % 360
        case "auto_rotate", "ar":
            try arguments.expect(1...1)
            autoRotate = try arguments.bool(0) ?? autoRotate
        case "strip_metadata", "sm":
            try arguments.expect(1...1)
            stripMetadata = try arguments.bool(0) ?? stripMetadata
        case "keep_copyright", "kcr":
            try arguments.expect(1...1)
            keepCopyright = try arguments.bool(0) ?? keepCopyright
        case "strip_color_profile", "scp":
            try arguments.expect(1...1)
            stripColorProfile = try arguments.bool(0) ?? stripColorProfile
        case "cachebuster", "cb":
            try arguments.expect(1...1)
            cacheBuster = option.arguments[0]
        case "preset", "pr":
            guard depth < 4 else { throw .badOption("presets nest too deeply (a preset naming itself?)") }
            for name in option.arguments {
                guard let preset = presets[name] else { throw .badOption("there is no preset named '\(name)'") }
                try apply(preset, presets: presets, depth: depth + 1)
            }
        default:
            guard try applyLayoutOrDelivery(option, arguments) else {
                throw .badOption("unknown or unsupported option '\(option.name)'")
            }
        }
    }

    /// `W:H:ENLARGE:EXTEND:GRAVITY:X:Y` from argument `start` (`s`, and `rs` after its type).
    private mutating func applySize(_ arguments: ArgumentReader, from start: Int) throws(ProxyError) {
        if let value = try arguments.size(start) { width = value }
        if let value = try arguments.size(start + 1) { height = value }
        if let value = try arguments.bool(start + 2) { enlarge = value }
        if arguments.option.arguments.count > start + 3 { try applyExtend(arguments, from: start + 3) }
    }

    /// `EXTEND:GRAVITY:X:Y` from argument `start`.
    private mutating func applyExtend(_ arguments: ArgumentReader, from start: Int) throws(ProxyError) {
        if let value = try arguments.bool(start) { extend = value }
        guard arguments.argument(start + 1) != nil else { return }
        let placed = try arguments.gravity(from: start + 1)
        guard placed.gravity != .smart else {
            throw .badOption("\(arguments.option.name): extend cannot place the image by smart gravity")
        }
        (extendGravity, extendGravityOffset) = placed
    }

    /// Every setting in one fixed order: equal strings mean equal processing (the ETag's input).
    public var canonicalDescription: String {
        var parts = [
            "rt:\(resizingType.rawValue)", "s:\(width):\(height)", "dpr:\(dpr)", "el:\(enlarge)", "ex:\(extend)",
            "g:\(gravity):\(gravityOffset)", "exg:\(extendGravity):\(extendGravityOffset)",
            "q:\(quality.map(String.init) ?? "-")", "f:\(format?.rawValue ?? "-")",
            "bl:\(blur)", "sh:\(sharpen)", "rot:\(rotate)", "ar:\(autoRotate)", "sm:\(stripMetadata)",
            "z:\(zoomWidth):\(zoomHeight)", "min:\(minWidth):\(minHeight)", "fl:\(flipHorizontal):\(flipVertical)",
            "pd:\(padding)", "pix:\(pixelate)", "mb:\(maxBytes)", "raw:\(raw)",
            "aq:\(autoQuality.map { "\($0)" } ?? "-")", "best:\(bestFormat)",
            "skp:\(skipProcessing.map(\.rawValue).sorted())",
            "exar:\(extendAspectRatio):\(extendAspectRatioGravity):\(extendAspectRatioGravityOffset)",
            "fq:\(formatQuality.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" })",
            "t:\(trim.map { "\($0)" } ?? "-")", "wm:\(watermark.map { "\($0)" } ?? "-")", "eth:\(enforceThumbnail)",
            "kcr:\(keepCopyright)",
            "scp:\(stripColorProfile)", "cb:\(cacheBuster)",
        ]
        if let crop {
            parts.append(
                "c:\(crop.width):\(crop.height):\(crop.gravity.map { "\($0)" } ?? "-"):\(cropGravityOffset)"
            )
        }
        if let background { parts.append("bg:\(background.r):\(background.g):\(background.b)") }
        return parts.joined(separator: "/")
    }
}
