/// What a HEIF file declares about its items, read before libheif sees the file
/// (ISO/IEC 14496-12 `meta`, `iinf`/`infe`, `iloc`, `idat`; ISO/IEC 23008-12 `grid`/`iovl`):
/// the item types (`hvc1` for HEVC, `av01` for AV1, `grid`…) and the canvas size each derived
/// image (`grid`, `iovl`) declares in its data, which libheif 1.15 allocates before checking
/// it against the image's `ispe`. Every read is bounds-checked; what does not parse is left out.
struct HEIFContainer {
    private(set) var itemTypes: [UInt32: String] = [:]
    /// The output size of every `grid` and `iovl` item whose data could be read.
    private(set) var derivedImageSizes: [PixelSize] = []

    var types: Set<String> { Set(itemTypes.values) }

    init(_ bytes: UnsafeRawBufferPointer) {
        let reader = BoxReader(bytes: bytes)
        guard let meta = reader.boxes(from: 0, to: bytes.count).first(where: { $0.type == "meta" }) else { return }
        let children = reader.boxes(from: meta.body + 4, to: meta.end)  // meta is a full box
        for iinf in children where iinf.type == "iinf" {
            guard let version = reader.uint(iinf.body, size: 1) else { continue }
            for entry in reader.boxes(from: iinf.body + 4 + (version == 0 ? 2 : 4), to: iinf.end)
            where entry.type == "infe" {
                // infe versions 2 and 3: item_ID (16 or 32 bits), protection index (16), item_type.
                guard let infeVersion = reader.uint(entry.body, size: 1), infeVersion >= 2,
                    let id = reader.uint(entry.body + 4, size: infeVersion == 2 ? 2 : 4),
                    let type = reader.fourCC(entry.body + 4 + (infeVersion == 2 ? 2 : 4) + 2)
                else { continue }
                itemTypes[UInt32(id)] = type
            }
        }
        let idat = children.first { $0.type == "idat" }
        for iloc in children where iloc.type == "iloc" {
            for location in reader.locations(in: iloc) {
                guard let type = itemTypes[location.item], type == "grid" || type == "iovl" else { continue }
                let start = location.inItemData ? (idat?.body ?? -1) + location.offset : location.offset
                if let size = reader.canvasSize(ofDerivedImage: type, at: start) {
                    derivedImageSizes.append(size)
                }
            }
        }
    }
}

/// Bounds-checked big-endian reads over a buffer.
private struct BoxReader {
    let bytes: UnsafeRawBufferPointer

    struct Box {
        var type: String
        /// Where the box's content starts and the box ends.
        var body: Int
        var end: Int
    }

    /// The boxes in `start..<end` (at most 4,096: a real file has a few dozen).
    func boxes(from start: Int, to end: Int) -> [Box] {
        var found: [Box] = []
        var offset = start
        while offset + 8 <= end, found.count < 4096, let size32 = uint(offset, size: 4), let type = fourCC(offset + 4) {
            var header = 8
            var size = size32
            if size32 == 1 {  // a 64-bit size follows the type
                guard let size64 = uint(offset + 8, size: 8) else { break }
                size = size64
                header = 16
            } else if size32 == 0 {  // to the end of the enclosing box
                size = end - offset
            }
            guard size >= header, size <= end - offset else { break }
            found.append(Box(type: type, body: offset + header, end: offset + size))
            offset += size
        }
        return found
    }

    struct Location {
        var item: UInt32
        /// In the `idat` box (construction method 1), else from the start of the file.
        var inItemData: Bool
        var offset: Int
    }

    /// The first extent of each item `iloc` places (versions 0–2), at most 65,536 items.
    func locations(in iloc: Box) -> [Location] {
        guard let version = uint(iloc.body, size: 1), version <= 2, let sizes = uint(iloc.body + 4, size: 1),
            let moreSizes = uint(iloc.body + 5, size: 1)
        else { return [] }
        let offsetSize = sizes >> 4
        let lengthSize = sizes & 0xF
        let baseOffsetSize = moreSizes >> 4
        let indexSize = version == 0 ? 0 : moreSizes & 0xF
        let idSize = version < 2 ? 2 : 4
        guard [offsetSize, lengthSize, baseOffsetSize, indexSize].allSatisfy({ [0, 4, 8].contains($0) }),
            let count = uint(iloc.body + 6, size: idSize)
        else { return [] }
        var cursor = iloc.body + 6 + idSize
        var found: [Location] = []
        for _ in 0..<min(count, 65_536) {
            guard let item = uint(cursor, size: idSize) else { break }
            cursor += idSize
            var method = 0
            if version >= 1 {
                guard let value = uint(cursor, size: 2) else { break }
                method = value & 0xF
                cursor += 2
            }
            guard let base = uint(cursor + 2, size: baseOffsetSize),
                let extents = uint(cursor + 2 + baseOffsetSize, size: 2)
            else { break }
            cursor += 2 + baseOffsetSize + 2
            let extentSize = indexSize + offsetSize + lengthSize
            if extents > 0, let offset = uint(cursor + indexSize, size: offsetSize), offset <= Int.max - base {
                found.append(
                    Location(item: UInt32(truncatingIfNeeded: item), inItemData: method == 1, offset: base + offset)
                )
            }
            cursor += extents * extentSize
            guard cursor <= iloc.end else { break }
        }
        return found
    }

    /// The output size a `grid` (version, flags, rows−1, columns−1, width, height) or `iovl`
    /// (version, flags, four 16-bit fill values, width, height) declares; 32-bit sizes when
    /// flags bit 0 is set.
    func canvasSize(ofDerivedImage type: String, at start: Int) -> PixelSize? {
        guard start >= 0, let flags = uint(start + 1, size: 1) else { return nil }
        let fieldSize = flags & 1 == 1 ? 4 : 2
        let sizeOffset = start + (type == "grid" ? 4 : 10)
        guard let width = uint(sizeOffset, size: fieldSize), let height = uint(sizeOffset + fieldSize, size: fieldSize)
        else { return nil }
        return PixelSize(width: width, height: height)
    }

    /// An unsigned big-endian value of 0, 1, 2, 4 or 8 bytes (`nil` past the end, or 8 bytes
    /// over `Int.max`).
    func uint(_ offset: Int, size: Int) -> Int? {
        guard offset >= 0, size >= 0, offset <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for index in 0..<size { value = value << 8 | UInt64(bytes[offset + index]) }
        return value <= UInt64(Int.max) ? Int(value) : nil
    }

    func fourCC(_ offset: Int) -> String? {
        guard offset >= 0, offset <= bytes.count - 4 else { return nil }
        return String(decoding: bytes[offset..<offset + 4], as: Unicode.ASCII.self)
    }
}
