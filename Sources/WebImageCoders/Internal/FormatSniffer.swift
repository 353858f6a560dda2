/// Signature checks behind ``ImageFormatDetails/init(sniffing:)``.
struct FormatSniffer {
    let bytes: UnsafeRawBufferPointer

    func sniff() -> ImageFormatDetails {
        if starts(with: [0xFF, 0xD8, 0xFF]) { return ImageFormatDetails(format: .jpeg) }
        if starts(with: PNGSignature.bytes) { return sniffPNG() }
        // A damaged PNG signature (a changed or line-ending-mangled byte) is still a PNG: the
        // decoder then reports the bad signature, which says more than "unknown format".
        if matches(Array("IHDR".utf8), at: 12), bytes.count >= 16 { return ImageFormatDetails(format: .png) }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) {
            return ImageFormatDetails(format: .gif)
        }
        if starts(with: Array("RIFF".utf8)), matches(Array("WEBP".utf8), at: 8) { return sniffWebP() }
        if matches(Array("ftyp".utf8), at: 4) { return sniffISOBMFF() }
        if starts(with: [0x49, 0x49, 0x2A, 0x00]) || starts(with: [0x4D, 0x4D, 0x00, 0x2A]) {
            return ImageFormatDetails(format: .tiff)
        }
        if starts(with: [0xFF, 0x0A])
            || starts(with: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
        {
            return ImageFormatDetails(format: .jxl)
        }
        if starts(with: Array("%PDF".utf8)) { return ImageFormatDetails(format: .pdf) }
        if starts(with: Array("BM".utf8)), bytes.count >= 26 { return ImageFormatDetails(format: .bmp) }
        if starts(with: [0x00, 0x00, 0x01, 0x00]) || starts(with: [0x00, 0x00, 0x02, 0x00]),
            bytes.count >= 6, readUInt16LE(at: 4) > 0
        {
            return ImageFormatDetails(format: .ico)
        }
        if looksLikeSVG() { return ImageFormatDetails(format: .svg) }
        return ImageFormatDetails(format: .unknown)
    }

    private func starts(with signature: [UInt8]) -> Bool { matches(signature, at: 0) }

    private func matches(_ signature: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, bytes.count >= offset + signature.count else { return false }
        for (index, byte) in signature.enumerated() where bytes[offset + index] != byte { return false }
        return true
    }

    private func readUInt16LE(at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    private func readUInt32BE(at offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// APNG announces itself with an `acTL` chunk before the first `IDAT`. The walk ends there, or
    /// at a chunk type that is not four ASCII letters (a corrupt stream, however long).
    private func sniffPNG() -> ImageFormatDetails {
        var details = ImageFormatDetails(format: .png)
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = Int(readUInt32BE(at: offset))
            let typeBytes = bytes[offset + 4..<offset + 8]
            guard typeBytes.allSatisfy(PNGChunkSequence.isTypeLetter) else { break }
            let type = String(decoding: typeBytes, as: UTF8.self)
            if type == "IHDR", offset + 18 <= bytes.count {
                let colorType = bytes[offset + 8 + 9]
                details.hasAlpha = colorType & 4 != 0
            } else if type == "tRNS" {
                details.hasAlpha = true
            } else if type == "acTL" {
                details.isAnimated = true
            } else if type == "IDAT" {
                break
            }
            guard length <= Int(Int32.max) else { break }
            offset += 12 + length
        }
        return details
    }

    private func sniffWebP() -> ImageFormatDetails {
        var details = ImageFormatDetails(format: .webp)
        guard bytes.count >= 16 else { return details }
        switch String(decoding: bytes[12..<16], as: UTF8.self) {
        case "VP8 ":
            details.webpEncoding = .lossy
            details.hasAlpha = false
        case "VP8L":
            details.webpEncoding = .lossless
            // The alpha_is_used bit of the VP8L header, when the header is there.
            if bytes.count >= 25 { details.hasAlpha = bytes[24] & 0x10 != 0 }
        case "VP8X":
            details.webpEncoding = .extended
            if bytes.count >= 21 {
                details.isAnimated = bytes[20] & 0x02 != 0
                details.hasAlpha = bytes[20] & 0x10 != 0
            }
        default:
            break
        }
        return details
    }

    /// HEIF-family files: an `ftyp` box whose major or compatible brands name the codec.
    private func sniffISOBMFF() -> ImageFormatDetails {
        // ftyp: size, "ftyp", major brand, minor version, compatible brands…
        guard bytes.count >= 12 else { return ImageFormatDetails(format: .unknown) }
        let boxEnd = min(Int(readUInt32BE(at: 0)), bytes.count)
        var brands = [String(decoding: bytes[8..<12], as: UTF8.self)]
        var offset = 16
        while offset + 4 <= boxEnd {
            brands.append(String(decoding: bytes[offset..<offset + 4], as: UTF8.self))
            offset += 4
        }
        let major = brands.first ?? ""
        func format(of brand: String) -> ImageFormat? {
            switch brand {
            case "avif", "avis": .avif
            case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs": .heic
            case "mif1", "msf1", "mif2": .heif
            default: nil
            }
        }
        if let format = format(of: major), format != .heif {
            return ImageFormatDetails(format: format, isAnimated: major == "avis" || major == "hevc" || major == "msf1")
        }
        // A generic major brand (mif1, msf1): a compatible avif/heic brand is more specific.
        let compatible = brands.dropFirst().compactMap(format(of:))
        if let specific = compatible.first(where: { $0 != .heif }) {
            return ImageFormatDetails(format: specific, isAnimated: major == "msf1")
        }
        if format(of: major) == .heif || !compatible.isEmpty {
            return ImageFormatDetails(format: .heif, isAnimated: major == "msf1")
        }
        return ImageFormatDetails(format: .unknown)
    }

    /// Text that opens with an XML declaration, comment, doctype or `<svg` and contains `<svg`
    /// within the first 4 KB.
    private func looksLikeSVG() -> Bool {
        let prefix = bytes.prefix(4096)
        var start = prefix.startIndex
        if prefix.count >= 3, prefix[0] == 0xEF, prefix[1] == 0xBB, prefix[2] == 0xBF { start += 3 }
        while start < prefix.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(prefix[start]) { start += 1 }
        guard start < prefix.endIndex, prefix[start] == UInt8(ascii: "<") else { return false }
        let text = String(decoding: prefix[start...], as: UTF8.self).lowercased()
        return text.contains("<svg")
    }
}
