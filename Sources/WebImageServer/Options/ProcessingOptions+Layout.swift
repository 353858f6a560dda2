import Foundation
import WebImageCoders

extension ProcessingOptions {
    /// imgproxy's options for the result's layout (zoom, minimum sizes, flip, padding, pixelate,
    /// extend_aspect_ratio) and its delivery (format_quality, expires, filename,
    /// return_attachment, max_bytes, skip_processing, raw); `false` when `option` is none of them.
    mutating func applyLayoutOrDelivery(_ option: ProxyOption, _ arguments: ArgumentReader) throws(ProxyError) -> Bool {
        switch option.name {
        case "zoom", "z":
            try arguments.expect(1...2)
            zoomWidth = try Self.positive(arguments, 0) ?? zoomWidth
            zoomHeight = option.arguments.count > 1 ? try Self.positive(arguments, 1) ?? zoomHeight : zoomWidth
        case "min-width", "mw":
            try arguments.expect(1...1)
            minWidth = try arguments.size(0) ?? minWidth
        case "min-height", "mh":
            try arguments.expect(1...1)
            minHeight = try arguments.size(0) ?? minHeight
        case "flip", "fl":
            try arguments.expect(1...2)
            flipHorizontal = try arguments.bool(0) ?? flipHorizontal
            flipVertical = try arguments.bool(1) ?? flipVertical
        case "padding", "pd":
            try arguments.expect(1...4)
            try applyPadding(arguments)
        case "trim", "t":
            try arguments.expect(1...4)
            try applyTrim(arguments)
        case "watermark", "wm":
            try arguments.expect(1...5)
            try applyWatermark(arguments)
        case "enforce_thumbnail", "eth":
            try arguments.expect(1...1)
            enforceThumbnail = try arguments.bool(0) ?? enforceThumbnail
        case "pixelate", "pix":
            try arguments.expect(1...1)
            pixelate = try arguments.size(0) ?? pixelate
        case "extend_aspect_ratio", "extend_ar", "exar":
            try arguments.expect(1...4)
            extendAspectRatio = try arguments.bool(0) ?? extendAspectRatio
            if arguments.argument(1) != nil {
                let placed = try arguments.gravity(from: 1)
                guard placed.gravity != .smart else { throw .badOption("\(option.name): smart gravity cannot place") }
                (extendAspectRatioGravity, extendAspectRatioGravityOffset) = placed
            }
        default:
            return try applyDelivery(option, arguments)
        }
        return true
    }

    /// `THRESHOLD:COLOR:EQUAL_HOR:EQUAL_VER`; an empty threshold turns trimming off (imgproxy).
    private mutating func applyTrim(_ arguments: ArgumentReader) throws(ProxyError) {
        guard let threshold = try arguments.number(0) else {
            trim = nil
            return
        }
        guard threshold >= 0 else { throw .badOption("trim:\(arguments.option.arguments[0]): must not be negative") }
        var trim = Trim(threshold: threshold, color: try arguments.hexColor(1))
        trim.equalHorizontal = try arguments.bool(2) ?? false
        trim.equalVertical = try arguments.bool(3) ?? false
        self.trim = trim
    }

    /// `OPACITY:POSITION:X:Y:SCALE`; opacity 0 turns the watermark off.
    private mutating func applyWatermark(_ arguments: ArgumentReader) throws(ProxyError) {
        let name = arguments.option.name
        guard let opacity = try arguments.number(0), (0...1).contains(opacity) else {
            throw .badOption("\(name): the opacity must be a number from 0 to 1")
        }
        guard opacity > 0 else {
            watermark = nil
            return
        }
        var mark = WatermarkOptions(opacity: opacity)
        if let position = arguments.argument(1) {
            guard let named = WatermarkOptions.positions[position] else {
                throw .badOption(
                    "\(name): '\(position)' is not a position (ce, no, so, ea, we, noea, nowe, soea, sowe, re)"
                )
            }
            mark.position = named
        }
        mark.offset = GravityOffset(x: try arguments.number(2) ?? 0, y: try arguments.number(3) ?? 0)
        if let scale = try arguments.number(4) {
            guard scale > 0 else { throw .badOption("\(name): the scale must be a positive number") }
            mark.scale = scale
        }
        watermark = mark
    }

    private mutating func applyDelivery(_ option: ProxyOption, _ arguments: ArgumentReader) throws(ProxyError) -> Bool {
        switch option.name {
        case "format_quality", "fq":
            guard !option.arguments.isEmpty, option.arguments.count.isMultiple(of: 2) else {
                throw .badOption("\(option.name): takes pairs of FORMAT:QUALITY")
            }
            for pair in stride(from: 0, to: option.arguments.count, by: 2) {
                guard let format = Self.format(named: option.arguments[pair]) else {
                    throw .badOption("\(option.name): '\(option.arguments[pair])' is not a format")
                }
                guard let quality = try arguments.integer(pair + 1), (0...100).contains(quality) else {
                    throw .badOption("\(option.name): the quality of \(format.rawValue) must be 0 to 100")
                }
                formatQuality[format] = quality == 0 ? nil : quality
            }
        case "expires", "exp":
            try arguments.expect(1...1)
            guard let moment = try arguments.integer(0) else { throw .badOption("expires: needs a unix timestamp") }
            // imgproxy's answer for an expired URL: 404.
            if moment > 0, moment < Int(Date().timeIntervalSince1970) {
                throw ProxyError(.expired, "the URL expired at \(moment) (unix time)")
            }
            expires = moment
        case "filename", "fn":
            try arguments.expect(1...2)
            filename = try Self.filename(option, encoded: arguments.bool(1) ?? false)
        case "return_attachment", "att":
            try arguments.expect(1...1)
            returnAttachment = try arguments.bool(0) ?? returnAttachment
        case "max_bytes", "mb":
            try arguments.expect(1...1)
            maxBytes = try arguments.byteCount(0) ?? maxBytes
        case "autoquality", "aq":
            autoQuality = try AutoQualityOption(arguments)
        case "skip_processing", "skp":
            guard !option.arguments.isEmpty else { throw .badOption("\(option.name): name at least one format") }
            for name in option.arguments {
                guard let format = Self.format(named: name) else {
                    throw .badOption("\(option.name): '\(name)' is not a format")
                }
                skipProcessing.insert(format)
            }
        case "raw":
            try arguments.expect(1...1)
            raw = try arguments.bool(0) ?? raw
        default:
            return false
        }
        return true
    }

    /// `padding:T:R:B:L`, CSS's shorthand: a missing right is the top, bottom the top, left the right.
    private mutating func applyPadding(_ arguments: ArgumentReader) throws(ProxyError) {
        let top = try arguments.size(0) ?? padding.top
        let right = try arguments.size(1) ?? top
        let bottom = try arguments.size(2) ?? top
        let left = try arguments.size(3) ?? right
        padding = Padding(top: top, right: right, bottom: bottom, left: left)
    }

    private static func positive(_ arguments: ArgumentReader, _ index: Int) throws(ProxyError) -> Double? {
        guard let value = try arguments.number(index) else { return nil }
        guard value > 0, value.isFinite else {
            throw .badOption("\(arguments.option.name): \(value) must be a positive number")
        }
        return value
    }

    /// The name as given, or decoded from URL-safe base64 when `encoded`.
    private static func filename(_ option: ProxyOption, encoded: Bool) throws(ProxyError) -> String {
        let raw = option.arguments[0]
        guard encoded else { return raw.removingPercentEncoding ?? raw }
        var base64 = raw.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let name = String(data: data, encoding: .utf8) else {
            throw .badOption("\(option.name): '\(raw)' is not URL-safe base64 of UTF-8 text")
        }
        return name
    }
}
