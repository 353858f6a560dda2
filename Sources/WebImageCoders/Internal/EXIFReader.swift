/// Reads the orientation tag from an EXIF (TIFF-structured) block. Bounds-checked throughout:
/// a malformed block yields `nil`, never a crash.
enum EXIFReader {
    /// `tiff` is the TIFF header and IFDs; an `Exif\0\0` prefix is skipped when present.
    static func orientation(in block: UnsafeRawBufferPointer) -> ImageOrientation? {
        var tiff = block
        if tiff.count >= 6, Array(tiff.prefix(6)) == [0x45, 0x78, 0x69, 0x66, 0, 0] {
            tiff = UnsafeRawBufferPointer(rebasing: tiff[6...])
        }
        guard tiff.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ offset: Int) -> Int? {
            guard offset >= 0, offset + 2 <= tiff.count else { return nil }
            let a = Int(tiff[offset])
            let b = Int(tiff[offset + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ offset: Int) -> Int? {
            guard let low = u16(littleEndian ? offset : offset + 2), let high = u16(littleEndian ? offset + 2 : offset)
            else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for index in 0..<min(count, 1000) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            if tag == 0x0112 {
                guard let type = u16(entry + 2), type == 3, let value = u16(entry + 8) else { return nil }
                return ImageOrientation(rawValue: value)
            }
        }
        return nil
    }
}
