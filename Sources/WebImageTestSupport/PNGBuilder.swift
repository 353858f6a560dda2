import Foundation

/// Writes PNG files byte by byte — any colour type, bit depth, Adam7 interlacing, PLTE/tRNS,
/// and APNG chunks — so tests can make inputs libpng's writer would not. Image data is stored
/// uncompressed (zlib "stored" blocks), which every decoder must accept.
public struct PNGBuilder {
    public enum ColorType: UInt8, Sendable, CaseIterable {
        case gray = 0
        case rgb = 2
        case palette = 3
        case grayAlpha = 4
        case rgba = 6

        public var channels: Int {
            switch self {
            case .gray, .palette: 1
            case .grayAlpha: 2
            case .rgb: 3
            case .rgba: 4
            }
        }
    }

    /// An APNG frame: its region, timing, operations and samples.
    public struct Frame {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int
        public var delayNumerator: UInt16
        public var delayDenominator: UInt16
        /// 0 none, 1 background, 2 previous.
        public var dispose: UInt8
        /// 0 source, 1 over.
        public var blend: UInt8
        public var samples: (Int, Int) -> [UInt16]

        // shape: a test builder: every field of the file it writes is a defaulted parameter
        public init(
            x: Int = 0,
            y: Int = 0,
            width: Int,
            height: Int,
            delayNumerator: UInt16 = 1,
            delayDenominator: UInt16 = 10,
            dispose: UInt8 = 0,
            blend: UInt8 = 0,
            samples: @escaping (Int, Int) -> [UInt16]
        ) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
            self.delayNumerator = delayNumerator
            self.delayDenominator = delayDenominator
            self.dispose = dispose
            self.blend = blend
            self.samples = samples
        }
    }

    public var width: Int
    public var height: Int
    public var colorType: ColorType
    public var bitDepth: Int
    public var interlaced: Bool
    /// PLTE entries; alpha below 255 adds a tRNS chunk.
    public var palette: [(UInt8, UInt8, UInt8, UInt8)]
    /// tRNS for gray (one value) or RGB (three values) images.
    public var transparentKey: [UInt16]?
    /// Colour chunks written after IHDR: `sRGB`, `gAMA`, `cHRM`, `iCCP`.
    public var colorChunks: [ColorChunk] = []

    /// A PNG colour chunk.
    public enum ColorChunk: Sendable {
        /// `sRGB` with rendering intent 0 (perceptual).
        case srgb
        /// `gAMA`: the file gamma (0.45455 for 1/2.2).
        case gamma(Double)
        /// `cHRM`: x, y of white, red, green and blue.
        case chromaticities(
            white: (Double, Double),
            red: (Double, Double),
            green: (Double, Double),
            blue: (Double, Double)
        )
        /// `iCCP` with these profile bytes.
        case iccProfile(Data)
    }

    // shape: a test builder: every field of the file it writes is a defaulted parameter
    public init(
        width: Int,
        height: Int,
        colorType: ColorType,
        bitDepth: Int = 8,
        interlaced: Bool = false,
        palette: [(UInt8, UInt8, UInt8, UInt8)] = [],
        transparentKey: [UInt16]? = nil
    ) {
        self.width = width
        self.height = height
        self.colorType = colorType
        self.bitDepth = bitDepth
        self.interlaced = interlaced
        self.palette = palette
        self.transparentKey = transparentKey
    }

    /// A still PNG; `samples(x, y)` gives each pixel's channel values at `bitDepth`.
    public func build(samples: (Int, Int) -> [UInt16]) -> Data {
        var chunks = header()
        chunks.append(
            chunk("IDAT", zlibStored(imageData(width: width, height: height, interlaced: interlaced, samples: samples)))
        )
        chunks.append(chunk("IEND", []))
        return Data(Self.signature + chunks.joined())
    }

    /// An APNG. With `defaultImageIsFirstFrame` the IDAT image is frame 0 (and `frames[0]`
    /// supplies it); otherwise `defaultImage` is shown by non-APNG decoders only.
    public func buildAnimated(
        frames: [Frame],
        plays: UInt32 = 0,
        defaultImageIsFirstFrame: Bool = true,
        defaultImage: ((Int, Int) -> [UInt16])? = nil
    ) -> Data {
        var chunks = header(animation: (UInt32(frames.count), plays))
        var sequence: UInt32 = 0
        func frameControl(_ frame: Frame) -> [UInt8] {
            var payload = be32(sequence) + be32(UInt32(frame.width)) + be32(UInt32(frame.height))
            payload += be32(UInt32(frame.x)) + be32(UInt32(frame.y))
            payload += be16(frame.delayNumerator) + be16(frame.delayDenominator) + [frame.dispose, frame.blend]
            sequence += 1
            return payload
        }
        var remaining = frames[...]
        if defaultImageIsFirstFrame, let first = remaining.popFirst() {
            chunks.append(chunk("fcTL", frameControl(first)))
            chunks.append(
                chunk(
                    "IDAT",
                    zlibStored(
                        imageData(width: first.width, height: first.height, interlaced: false, samples: first.samples)
                    )
                )
            )
        } else {
            let samples = defaultImage ?? { _, _ in Array(repeating: 0, count: colorType.channels) }
            chunks.append(
                chunk("IDAT", zlibStored(imageData(width: width, height: height, interlaced: false, samples: samples)))
            )
        }
        for frame in remaining {
            chunks.append(chunk("fcTL", frameControl(frame)))
            let data = zlibStored(
                imageData(width: frame.width, height: frame.height, interlaced: false, samples: frame.samples)
            )
            chunks.append(chunk("fdAT", be32(sequence) + data))
            sequence += 1
        }
        chunks.append(chunk("IEND", []))
        return Data(Self.signature + chunks.joined())
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    private func header(animation: (frames: UInt32, plays: UInt32)? = nil) -> [[UInt8]] {
        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [UInt8(bitDepth), colorType.rawValue, 0, 0, interlaced ? 1 : 0]
        var chunks = [chunk("IHDR", ihdr)]
        for color in colorChunks { chunks.append(colorChunk(color)) }
        if let animation { chunks.append(chunk("acTL", be32(animation.frames) + be32(animation.plays))) }
        if !palette.isEmpty {
            chunks.append(chunk("PLTE", palette.flatMap { [$0.0, $0.1, $0.2] }))
            if palette.contains(where: { $0.3 != 255 }) { chunks.append(chunk("tRNS", palette.map { $0.3 })) }
        }
        if let key = transparentKey { chunks.append(chunk("tRNS", key.flatMap { be16($0) })) }
        return chunks
    }

    /// Filtered (filter type 0) scanlines, in Adam7 pass order when interlaced.
    private func imageData(width: Int, height: Int, interlaced: Bool, samples: (Int, Int) -> [UInt16]) -> [UInt8] {
        let passes =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            : [(0, 0, 1, 1)]
        var out: [UInt8] = []
        for (x0, y0, dx, dy) in passes {
            let columns = Array(stride(from: x0, to: width, by: dx))
            let rows = Array(stride(from: y0, to: height, by: dy))
            guard !columns.isEmpty, !rows.isEmpty else { continue }
            for y in rows {
                out.append(0)
                var bits: [UInt16] = []
                for x in columns { bits += samples(x, y) }
                out += pack(bits)
            }
        }
        return out
    }

    private func pack(_ values: [UInt16]) -> [UInt8] {
        switch bitDepth {
        case 16: return values.flatMap { be16($0) }
        case 8: return values.map { UInt8($0) }
        default:
            var out: [UInt8] = []
            var current: UInt8 = 0
            var used = 0
            for value in values {
                current |= UInt8(value) << (8 - bitDepth - used)
                used += bitDepth
                if used == 8 {
                    out.append(current)
                    current = 0
                    used = 0
                }
            }
            if used > 0 { out.append(current) }
            return out
        }
    }

    private func colorChunk(_ color: ColorChunk) -> [UInt8] {
        func fixed(_ value: Double) -> [UInt8] { be32(UInt32((value * 100_000).rounded())) }
        switch color {
        case .srgb: return chunk("sRGB", [0])
        case .gamma(let gamma): return chunk("gAMA", fixed(gamma))
        case .chromaticities(let white, let red, let green, let blue):
            return chunk("cHRM", [white, red, green, blue].flatMap { fixed($0.0) + fixed($0.1) })
        case .iccProfile(let profile):
            return chunk("iCCP", Array("ICC profile".utf8) + [0, 0] + zlibStored([UInt8](profile)))
        }
    }

    private func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return be32(UInt32(payload.count)) + typeBytes + payload + be32(Checksum.crc32(typeBytes + payload))
    }

    private func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65535, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            out.append(final)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<offset + length]
            offset += length
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return out + be32(b << 16 | a)
    }

    private func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}
