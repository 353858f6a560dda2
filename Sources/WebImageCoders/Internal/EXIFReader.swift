/// Reads the orientation tag from an EXIF (TIFF-structured) block. Bounds-checked throughout:
/// a malformed block yields `nil`, never a crash.
enum EXIFReader {
    /// `tiff` is the TIFF header and IFDs; an `Exif\0\0` prefix is skipped when present.
    static func orientation(in block: UnsafeRawBufferPointer) -> ImageOrientation? {
        guard let directory = EXIFDirectory(Array(block)),
            let entry = directory.entries.first(where: { $0.tag == 0x0112 }), entry.type == 3,
            let value = directory.u16(entry.valueField)
        else { return nil }
        return ImageOrientation(rawValue: value)
    }
}

/// IFD0 of an EXIF (TIFF-structured) block: its byte order and entries, bounds-checked.
struct EXIFDirectory {
    struct Entry {
        var tag: Int
        var type: Int
        var count: Int
        /// Where the entry's 4-byte value field starts in ``bytes``.
        var valueField: Int
    }

    let bytes: [UInt8]
    let littleEndian: Bool
    private(set) var entries: [Entry] = []

    /// `nil` when `block` (with or without `Exif\0\0`) is not a readable TIFF header and IFD0.
    init?(_ block: [UInt8]) {
        var tiff = block
        if tiff.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) { tiff.removeFirst(6) }
        guard tiff.count >= 8 else { return nil }
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        bytes = tiff
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        // A directory cut short keeps the entries before the cut (what viewers read of it).
        for index in 0..<min(count, 1000) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2), let count = u32(entry + 4), entry + 12 <= tiff.count
            else { break }
            entries.append(Entry(tag: tag, type: type, count: count, valueField: entry + 8))
        }
    }

    func u16(_ offset: Int) -> Int? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let a = Int(bytes[offset])
        let b = Int(bytes[offset + 1])
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func u32(_ offset: Int) -> Int? {
        guard let low = u16(littleEndian ? offset : offset + 2), let high = u16(littleEndian ? offset + 2 : offset)
        else { return nil }
        return high << 16 | low
    }

    /// An ASCII entry's bytes without the trailing NULs; `nil` when absent or unreadable.
    func ascii(_ tag: Int) -> [UInt8]? {
        guard let entry = entries.first(where: { $0.tag == tag }), entry.type == 2, entry.count > 0,
            entry.count <= 65_535
        else { return nil }
        let start = entry.count <= 4 ? entry.valueField : u32(entry.valueField) ?? -1
        guard start >= 0, start + entry.count <= bytes.count else { return nil }
        let text = Array(bytes[start..<start + entry.count].prefix { $0 != 0 })
        return text.isEmpty ? nil : text
    }
}
