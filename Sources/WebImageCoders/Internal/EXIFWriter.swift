import Foundation

/// Builds the EXIF blocks encoders write.
enum EXIFWriter {
    /// Little-endian TIFF header, one IFD with tag 274 (orientation), no next IFD.
    static func orientationBlock(_ orientation: ImageOrientation) -> [UInt8] {
        let value = UInt8(orientation.rawValue)
        return [
            0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,  // "II", 42, IFD at 8
            0x01, 0x00,  // one entry
            0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, value, 0x00, 0x00, 0x00,  // 274, SHORT, 1, value
            0x00, 0x00, 0x00, 0x00,  // no next IFD
        ]
    }

    /// The EXIF block to write for `image` (TIFF header first, no `Exif\0\0`): its own block
    /// with the orientation tag set to the image's, or only an orientation tag when it has no
    /// block; empty when there is nothing to say (no block, upright pixels).
    static func block(for image: DecodedImage) -> [UInt8] {
        guard let exif = image.exif, let directory = EXIFDirectory([UInt8](exif)) else {
            return image.orientation == .up ? [] : orientationBlock(image.orientation)
        }
        if let entry = directory.entries.first(where: { $0.tag == 0x0112 }), entry.type == 3 {
            var bytes = directory.bytes
            let value = image.orientation.rawValue
            bytes[entry.valueField] = UInt8(directory.littleEndian ? value : 0)
            bytes[entry.valueField + 1] = UInt8(directory.littleEndian ? 0 : value)
            return bytes
        }
        // Without an orientation tag the viewer shows the pixels as stored: right when upright.
        return image.orientation == .up ? directory.bytes : orientationBlock(image.orientation)
    }

    /// A block holding only the Artist (315) and Copyright (33432) tags of `exif` (what
    /// imgproxy's `keep_copyright` keeps when metadata is stripped); `nil` when it has neither.
    static func copyrightBlock(from exif: [UInt8]) -> [UInt8]? {
        guard let directory = EXIFDirectory(exif) else { return nil }
        let kept = [(0x013B, directory.ascii(0x013B)), (0x8298, directory.ascii(0x8298))].compactMap { tag, text in
            text.map { (tag, $0 + [0]) }
        }
        guard !kept.isEmpty else { return nil }
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16) }
        var block: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + le32(8) + le16(kept.count)
        var data: [UInt8] = []
        let dataStart = 8 + 2 + kept.count * 12 + 4
        for (tag, text) in kept {
            block += le16(tag) + le16(2) + le32(text.count)
            if text.count <= 4 {
                block += text + [UInt8](repeating: 0, count: 4 - text.count)
            } else {
                block += le32(dataStart + data.count)
                data += text
                if data.count % 2 == 1 { data.append(0) }  // values start on word boundaries
            }
        }
        return block + le32(0) + data
    }
}

extension DecodedImage {
    /// Drops ``exif``; with `keepingCopyright`, keeps a block of only its Artist and Copyright
    /// tags when it has either (imgproxy's `strip_metadata` with `keep_copyright`).
    public mutating func stripMetadata(keepingCopyright: Bool) {
        guard let block = exif else { return }
        exif = keepingCopyright ? EXIFWriter.copyrightBlock(from: [UInt8](block)).map { Data($0) } : nil
    }
}
