import Foundation

/// A device-independent bitmap: the pixel part of BMP files and of ICO entries. Reads 1, 4 and
/// 8-bit palette images, 16 and 32-bit ones with or without bit-field masks, and 24-bit ones,
/// bottom-up or top-down; RLE and embedded JPEG/PNG compressions are refused. Every offset is
/// checked against the data, so a damaged file fails with a ``CoderError``, never a crash.
struct DIB {
    let width: Int
    let height: Int
    let bitsPerPixel: Int
    let topDown: Bool
    private let compression: Int
    private let masks: [UInt32]  // red, green, blue, alpha (alpha 0: none)
    private let palette: [RGBA]
    private let format: ImageFormat

    /// Parses the DIB header at `header` in `bytes`; `icon`: an ICO entry (its height counts the
    /// AND mask too). `pixelsStart`, when known (a BMP file says), bounds the palette: files
    /// that leave `biClrUsed` at 0 may store fewer entries than their depth allows.
    init(
        _ bytes: UnsafeRawBufferPointer,
        header: Int,
        format: ImageFormat,
        icon: Bool,
        pixelsStart: Int? = nil
    ) throws(CoderError) {
        self.format = format
        func u16(_ offset: Int) throws(CoderError) -> Int {
            guard offset >= 0, offset + 2 <= bytes.count else {
                throw .truncatedData(format, "the bitmap header is cut")
            }
            return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        }
        func u32(_ offset: Int) throws(CoderError) -> UInt32 {
            guard offset >= 0, offset + 4 <= bytes.count else {
                throw .truncatedData(format, "the bitmap header is cut")
            }
            return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
                | UInt32(bytes[offset + 3]) << 24
        }
        let size = Int(try u32(header))
        var storedHeight: Int
        if size == 12 {
            width = try u16(header + 4)
            storedHeight = try u16(header + 6)
            bitsPerPixel = try u16(header + 10)
            compression = 0
        } else {
            guard size >= 40 else { throw .corruptData(format, "bitmap header of \(size) bytes") }
            width = Int(Int32(bitPattern: try u32(header + 4)))
            storedHeight = Int(Int32(bitPattern: try u32(header + 8)))
            bitsPerPixel = try u16(header + 14)
            compression = Int(try u32(header + 16))
        }
        topDown = storedHeight < 0
        storedHeight = abs(storedHeight)
        height = icon ? storedHeight / 2 : storedHeight
        guard width > 0, height > 0, width <= 1 << 24, height <= 1 << 24 else {
            throw .corruptData(format, "invalid dimensions \(width)×\(height)")
        }
        guard [1, 4, 8, 16, 24, 32].contains(bitsPerPixel) else {
            throw .corruptData(format, "\(bitsPerPixel) bits per pixel")
        }
        // 0: none; 3: bit fields; 6: bit fields with alpha. 1, 2 (RLE), 4, 5 (JPEG, PNG): refused.
        guard [0, 3, 6].contains(compression) else {
            throw .corruptData(format, "compression \(compression) (RLE, JPEG or PNG inside a bitmap) is not supported")
        }
        masks = try Self.masks(size: size, header: header, bits: bitsPerPixel, compression: compression, read: u32)
        var colors: [RGBA] = []
        // The palette follows the header and, after a 40-byte header with bit fields, the masks.
        let paletteStart = header + size + (size == 40 && compression != 0 ? (compression == 6 ? 16 : 12) : 0)
        let entrySize = size == 12 ? 3 : 4
        if bitsPerPixel <= 8 {
            let used = size >= 40 ? Int(try u32(header + 32)) : 0
            var count = used == 0 || used > 1 << bitsPerPixel ? 1 << bitsPerPixel : used
            let start = paletteStart
            if let pixelsStart, pixelsStart > start { count = min(count, (pixelsStart - start) / entrySize) }
            guard start + count * entrySize <= bytes.count else { throw .truncatedData(format, "the palette is cut") }
            for index in 0..<count {
                let entry = start + index * entrySize
                colors.append(RGBA(r: bytes[entry + 2], g: bytes[entry + 1], b: bytes[entry]))
            }
        }
        palette = colors
        paletteEnd = paletteStart + colors.count * entrySize
    }

    /// Where the palette (and masks) end: an ICO entry's pixels start there.
    let paletteEnd: Int

    /// The channel masks: from the header (V2 and later), after a 40-byte header with bit
    /// fields, or the defaults (5-5-5 for 16 bits, 8-8-8 for 24 and 32).
    private static func masks(
        size: Int,
        header: Int,
        bits: Int,
        compression: Int,
        read: (Int) throws(CoderError) -> UInt32
    ) throws(CoderError) -> [UInt32] {
        if compression == 3 || compression == 6 {
            let alpha = size >= 56 || compression == 6 ? try read(header + 52) : 0
            return [try read(header + 40), try read(header + 44), try read(header + 48), alpha]
        }
        if bits == 16 { return [0x7C00, 0x03E0, 0x001F, 0] }
        return [0x00FF_0000, 0x0000_FF00, 0x0000_00FF, bits == 32 ? 0xFF00_0000 : 0]
    }

    /// Bytes per stored row (rows are padded to 4 bytes).
    var rowBytes: Int { ((width * bitsPerPixel + 31) / 32) * 4 }

    /// The pixels stored at `offset`; an ICO entry's AND mask follows them and makes the pixels
    /// it marks transparent (when the colours carry no alpha of their own). 32-bit pixels without
    /// bit fields whose fourth bytes are all 0 are opaque (the byte is unused there).
    func pixels(
        _ bytes: UnsafeRawBufferPointer,
        at offset: Int,
        andMask: Bool,
        deadline: CodingDeadline
    ) throws(CoderError) -> Bitmap {
        let (pixelBytes, overflow) = rowBytes.multipliedReportingOverflow(by: height)
        guard !overflow, offset >= 0, offset <= bytes.count, bytes.count - offset >= pixelBytes else {
            throw .truncatedData(format, "the pixels are cut")
        }
        var out = [UInt8](repeating: 255, count: width * height * 4)
        var anyAlpha = false
        var anyTranslucent = false
        for row in 0..<height {
            if row % 64 == 0 { try deadline.check(format) }
            let source = offset + row * rowBytes
            let y = topDown ? row : height - 1 - row
            for x in 0..<width {
                let color = pixel(bytes, row: source, x: x)
                let target = (y * width + x) * 4
                out[target] = color.r
                out[target + 1] = color.g
                out[target + 2] = color.b
                out[target + 3] = color.a
                if color.a != 0 { anyAlpha = true }
                if color.a != 255 { anyTranslucent = true }
            }
        }
        let hasAlphaChannel = masks[3] != 0
        if hasAlphaChannel, !anyAlpha, compression == 0 {
            for index in stride(from: 3, to: out.count, by: 4) { out[index] = 255 }
            anyTranslucent = false
        }
        var transparent = hasAlphaChannel && anyTranslucent
        if andMask, !(hasAlphaChannel && anyAlpha) {
            let maskRow = ((width + 31) / 32) * 4
            let maskStart = offset + pixelBytes
            if maskStart + maskRow * height <= bytes.count {
                for row in 0..<height {
                    let y = topDown ? row : height - 1 - row
                    for x in 0..<width where bytes[maskStart + row * maskRow + x / 8] & (0x80 >> UInt8(x % 8)) != 0 {
                        out[(y * width + x) * 4 + 3] = 0
                        transparent = true
                    }
                }
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: transparent, pixels: out)
    }

    private func pixel(_ bytes: UnsafeRawBufferPointer, row: Int, x: Int) -> RGBA {
        switch bitsPerPixel {
        case 1, 4, 8:
            let bit = x * bitsPerPixel
            let byte = bytes[row + bit / 8]
            let shift = 8 - bitsPerPixel - bit % 8
            let index = Int(byte >> UInt8(shift)) & ((1 << bitsPerPixel) - 1)
            return index < palette.count ? palette[index] : RGBA(r: 0, g: 0, b: 0)
        case 24:
            let at = row + x * 3
            return RGBA(r: bytes[at + 2], g: bytes[at + 1], b: bytes[at])
        case 16:
            let at = row + x * 2
            return masked(UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8)
        default:
            let at = row + x * 4
            return masked(
                UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3])
                    << 24
            )
        }
    }

    /// A value spread over the masks, each channel scaled to 0…255.
    private func masked(_ value: UInt32) -> RGBA {
        func channel(_ mask: UInt32) -> UInt8? {
            guard mask != 0 else { return nil }
            let shift = UInt32(mask.trailingZeroBitCount)
            let maximum = mask >> shift
            return UInt8((UInt64((value & mask) >> shift) * 255 + UInt64(maximum) / 2) / UInt64(maximum))
        }
        return RGBA(
            r: channel(masks[0]) ?? 0,
            g: channel(masks[1]) ?? 0,
            b: channel(masks[2]) ?? 0,
            a: channel(masks[3]) ?? 255
        )
    }
}
