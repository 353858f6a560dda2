/// What a HEIF file declares about its items, read before libheif sees the file
/// (ISO/IEC 14496-12 `meta`, `iinf`/`infe`, `iloc`, `idat`; ISO/IEC 23008-12 `grid`/`iovl`):
/// the item types (`hvc1` for HEVC, `av01` for AV1, `grid`…) and the canvas size each derived
/// image (`grid`, `iovl`) declares in its data, which libheif 1.15 allocates before checking
/// it against the image's `ispe`. Every read is bounds-checked; what does not parse is left out.
struct HEIFContainer {
    private(set) var itemTypes: [UInt32: String] = [:]
    /// The output size of every `grid` and `iovl` item whose data could be read.
    private(set) var derivedImageSizes: [PixelSize] = []
    /// `dimg` references (`iref`): the items each derived image is made from.
    private(set) var derivations: [UInt32: [UInt32]] = [:]
    /// The picture size each HEVC sequence parameter set (in the `hvcC` properties) declares:
    /// what libde265 allocates, whatever the `ispe` says.
    private(set) var codedImageSizes: [PixelSize] = []

    var types: Set<String> { Set(itemTypes.values) }

    /// Whether a derived image is built, directly or through others, from itself, or through
    /// more than 8 levels: libheif 1.15 follows such references until its stack overflows.
    var hasDerivationLoop: Bool {
        var finished: Set<UInt32> = []
        func loops(_ item: UInt32, path: inout [UInt32]) -> Bool {
            if finished.contains(item) { return false }
            if path.contains(item) || path.count > 8 { return true }
            path.append(item)
            defer { path.removeLast() }
            for source in derivations[item] ?? [] where loops(source, path: &path) { return true }
            finished.insert(item)
            return false
        }
        var path: [UInt32] = []
        return derivations.keys.contains { loops($0, path: &path) }
    }

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
        for iprp in children where iprp.type == "iprp" {
            for ipco in reader.boxes(from: iprp.body, to: iprp.end) where ipco.type == "ipco" {
                for property in reader.boxes(from: ipco.body, to: ipco.end) where property.type == "hvcC" {
                    codedImageSizes += HEVCParameterSets.pictureSizes(
                        inConfiguration: bytes,
                        property.body..<property.end
                    )
                }
            }
        }
        for iref in children where iref.type == "iref" {
            guard let version = reader.uint(iref.body, size: 1) else { continue }
            // Read as libheif 1.15 does: each reference's own box size is not trusted, the
            // entries follow one another (a mutated size must not hide a loop from us).
            let idSize = version == 0 ? 2 : 4
            var cursor = iref.body + 4
            while cursor + 8 <= iref.end, let size = reader.uint(cursor, size: 4), let type = reader.fourCC(cursor + 4)
            {
                cursor += size == 1 ? 16 : 8
                guard let from = reader.uint(cursor, size: idSize), let count = reader.uint(cursor + idSize, size: 2)
                else { break }
                cursor += idSize + 2
                var targets: [UInt32] = []
                for _ in 0..<count {
                    guard cursor + idSize <= iref.end, let target = reader.uint(cursor, size: idSize) else { break }
                    targets.append(UInt32(truncatingIfNeeded: target))
                    cursor += idSize
                }
                if type == "dimg" { derivations[UInt32(truncatingIfNeeded: from), default: []] += targets }
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

/// Picture sizes from the sequence parameter sets of an HEVC decoder configuration record
/// (`hvcC`, ISO/IEC 14496-15; SPS syntax from H.265 7.3.2.2). Bounds-checked throughout.
enum HEVCParameterSets {
    static func pictureSizes(inConfiguration bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [PixelSize] {
        var sizes: [PixelSize] = []
        var offset = range.lowerBound + 22  // the fixed part of the record
        guard offset < range.upperBound else { return [] }
        let arrays = Int(bytes[offset])
        offset += 1
        for _ in 0..<arrays {
            guard offset + 3 <= range.upperBound else { break }
            let type = bytes[offset] & 0x3F
            let count = Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            offset += 3
            for _ in 0..<count {
                guard offset + 2 <= range.upperBound else { return sizes }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
                guard offset + length <= range.upperBound else { return sizes }
                if type == 33,
                    let size = pictureSize(sps: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]))
                {
                    sizes.append(size)
                }
                offset += length
            }
        }
        return sizes
    }

    /// `pic_width_in_luma_samples` × `pic_height_in_luma_samples` of one SPS NAL unit.
    static func pictureSize(sps nal: UnsafeRawBufferPointer) -> PixelSize? {
        // Drop the 2-byte NAL header and the emulation prevention bytes (00 00 03 → 00 00).
        var payload: [UInt8] = []
        payload.reserveCapacity(min(nal.count, 64))
        var zeros = 0
        for byte in nal.dropFirst(2).prefix(256) {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            payload.append(byte)
        }
        var reader = BitReader(payload)
        guard reader.skip(4), let maxSubLayersMinus1 = reader.bits(3), reader.skip(1),
            reader.skip(96)  // general profile, tier, flags and level
        else { return nil }
        var profilePresent: [Bool] = []
        var levelPresent: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            guard let profile = reader.bits(1), let level = reader.bits(1) else { return nil }
            profilePresent.append(profile == 1)
            levelPresent.append(level == 1)
        }
        if maxSubLayersMinus1 > 0 { guard reader.skip(2 * (8 - maxSubLayersMinus1)) else { return nil } }
        for index in 0..<maxSubLayersMinus1 {
            if profilePresent[index] { guard reader.skip(88) else { return nil } }
            if levelPresent[index] { guard reader.skip(8) else { return nil } }
        }
        guard reader.exponentialGolomb() != nil, let chroma = reader.exponentialGolomb() else { return nil }
        if chroma == 3 { guard reader.skip(1) else { return nil } }
        guard let width = reader.exponentialGolomb(), let height = reader.exponentialGolomb() else { return nil }
        return PixelSize(width: width, height: height)
    }

    /// Reads bits most significant first; every read fails past the end.
    struct BitReader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func bits(_ count: Int) -> Int? {
            guard count >= 0, count <= 32, position + count <= bytes.count * 8 else { return nil }
            var value = 0
            for _ in 0..<count {
                value = value << 1 | Int(bytes[position / 8] >> (7 - UInt8(position % 8)) & 1)
                position += 1
            }
            return value
        }

        mutating func skip(_ count: Int) -> Bool {
            guard count >= 0, position + count <= bytes.count * 8 else { return false }
            position += count
            return true
        }

        /// ue(v): at most 31 leading zeros.
        mutating func exponentialGolomb() -> Int? {
            var zeros = 0
            while true {
                guard let bit = bits(1) else { return nil }
                if bit == 1 { break }
                zeros += 1
                guard zeros <= 31 else { return nil }
            }
            guard let rest = bits(zeros) else { return nil }
            return (1 << zeros) - 1 + rest
        }
    }
}
