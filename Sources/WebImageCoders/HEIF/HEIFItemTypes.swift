/// The item types a HEIF file declares (`meta` → `iinf` → `infe`, ISO/IEC 14496-12 and
/// 23008-12): `hvc1` for HEVC-coded images, `av01` for AV1, `grid`, `Exif`… Read before libheif
/// sees the file, so AV1-coded items can be sent away from libheif's decoder. Every read is
/// bounds-checked; a file that does not parse yields the types found so far.
enum HEIFItemTypes {
    static func read(_ bytes: UnsafeRawBufferPointer) -> Set<String> {
        var types: Set<String> = []
        guard let meta = boxes(in: bytes, from: 0, to: bytes.count).first(where: { $0.type == "meta" }) else {
            return types
        }
        // meta is a full box: version and flags, then its children.
        for child in boxes(in: bytes, from: meta.body + 4, to: meta.end) where child.type == "iinf" {
            guard let version = byte(bytes, child.body) else { continue }
            let entries = child.body + 4 + (version == 0 ? 2 : 4)
            for entry in boxes(in: bytes, from: entries, to: child.end) where entry.type == "infe" {
                // infe version 2 and 3: item_ID (16 or 32 bits), protection index (16), item_type.
                guard let infeVersion = byte(bytes, entry.body), infeVersion >= 2 else { continue }
                let typeOffset = entry.body + 4 + (infeVersion == 2 ? 2 : 4) + 2
                if typeOffset + 4 <= entry.end, let type = fourCC(bytes, typeOffset) { types.insert(type) }
            }
        }
        return types
    }

    private struct Box {
        var type: String
        /// Where the box's content starts and the box ends.
        var body: Int
        var end: Int
    }

    /// The boxes in `start..<end` (at most 4,096: a real file has a few dozen).
    private static func boxes(in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> [Box] {
        var found: [Box] = []
        var offset = start
        while offset + 8 <= end, found.count < 4096, let size32 = uint32(bytes, offset),
            let type = fourCC(bytes, offset + 4)
        {
            var header = 8
            var size = Int(size32)
            if size32 == 1 {  // a 64-bit size follows the type
                guard let high = uint32(bytes, offset + 8), let low = uint32(bytes, offset + 12), high == 0 else {
                    break
                }
                size = Int(low)
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

    private static func byte(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt8? {
        offset >= 0 && offset < bytes.count ? bytes[offset] : nil
    }

    private static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    private static func fourCC(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> String? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        return String(decoding: bytes[offset..<offset + 4], as: Unicode.ASCII.self)
    }
}
