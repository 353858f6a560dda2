import Foundation

/// An AVIF's first embedded thumbnail (an `av01` item whose `thmb` reference points at the
/// primary item) cut out as an AVIF file of its own, so libavif, which decodes only a file's
/// primary item, can decode it. The new file keeps the source's `ftyp`, `hdlr` and every
/// property (`ipco`); its one item is the thumbnail, with the thumbnail's own property
/// associations (and the primary item's `colr` when the thumbnail has none: it shows the same
/// colours), and its bytes in one `mdat`. Anything this reader does not expect (thumbnails in
/// `idat`, grids, 32-bit item IDs, extents past the data) gives `nil`: the caller decodes the
/// whole image instead, as when there is no thumbnail.
enum AVIFThumbnail {
    /// The thumbnail as a standalone AVIF, `nil` when the file has none this reader can cut.
    static func file(from data: Data) -> Data? {
        var reader = BoxReader(data, range: data.startIndex..<data.endIndex)
        guard let boxes = reader.boxes(),
            let ftyp = boxes.first(where: { $0.type == "ftyp" }),
            let meta = boxes.first(where: { $0.type == "meta" }),
            let parsed = Meta(data, meta)
        else { return nil }
        return parsed.thumbnailFile(ftyp: data[ftyp.whole])
    }

    /// One box: its type, the bytes after its header, and all of it.
    struct Box {
        var type: String
        var body: Range<Int>
        var whole: Range<Int>
    }

    /// Reads boxes and big-endian numbers from a range of `data`, never past it.
    struct BoxReader {
        let data: Data
        var position: Int
        let end: Int

        init(_ data: Data, range: Range<Int>) {
            self.data = data
            position = range.lowerBound
            end = range.upperBound
        }

        mutating func integer(_ byteCount: Int) -> Int? {
            guard byteCount >= 0, byteCount <= 8, end - position >= byteCount else { return nil }
            var value: UInt64 = 0
            for index in position..<(position + byteCount) { value = value << 8 | UInt64(data[index]) }
            position += byteCount
            return value > UInt64(Int.max) ? nil : Int(value)
        }

        mutating func skip(_ byteCount: Int) -> Bool {
            guard byteCount >= 0, end - position >= byteCount else { return false }
            position += byteCount
            return true
        }

        /// The boxes from here to the end; `nil` when one is malformed.
        mutating func boxes() -> [Box]? {
            var boxes: [Box] = []
            while position < end {
                let start = position
                guard var size = integer(4), let code = integer(4) else { return nil }
                if size == 1 {
                    guard let large = integer(8) else { return nil }
                    size = large
                } else if size == 0 {
                    size = end - start
                }
                let bodyStart = position
                guard size >= bodyStart - start, end - start >= size else { return nil }
                let type = String(decoding: withUnsafeBytes(of: UInt32(code).bigEndian) { Array($0) }, as: UTF8.self)
                boxes.append(Box(type: type, body: bodyStart..<(start + size), whole: start..<(start + size)))
                position = start + size
            }
            return boxes
        }
    }

    /// The parts of `meta` the cut needs.
    struct Meta {
        let data: Data
        var handler: Range<Int>
        var primary: Int
        var infos: [Int: Range<Int>] = [:]  // item ID: its whole `infe` box
        var itemTypes: [Int: String] = [:]
        var locations: [Int: [Range<Int>]] = [:]  // item ID: its extents in the file
        var thumbnails: [Int] = []  // items whose `thmb` reference names the primary item
        var properties: Range<Int>
        var propertyTypes: [String] = []  // by index, from 1
        var associations: [Int: [(essential: Bool, index: Int)]] = [:]

        init?(_ data: Data, _ meta: Box) {
            self.data = data
            var reader = BoxReader(data, range: meta.body)
            guard reader.skip(4), let children = reader.boxes(),
                let hdlr = children.first(where: { $0.type == "hdlr" }),
                let pitm = children.first(where: { $0.type == "pitm" }),
                let iprp = children.first(where: { $0.type == "iprp" })
            else { return nil }
            handler = hdlr.whole
            var pitmReader = BoxReader(data, range: pitm.body)
            guard let version = pitmReader.integer(1), pitmReader.skip(3),
                let primaryID = pitmReader.integer(version == 0 ? 2 : 4)
            else { return nil }
            primary = primaryID
            var iprpReader = BoxReader(data, range: iprp.body)
            guard let propertyBoxes = iprpReader.boxes(),
                let ipco = propertyBoxes.first(where: { $0.type == "ipco" })
            else { return nil }
            properties = ipco.whole
            var ipcoReader = BoxReader(data, range: ipco.body)
            guard let listed = ipcoReader.boxes() else { return nil }
            propertyTypes = listed.map(\.type)
            for ipma in propertyBoxes where ipma.type == "ipma" {
                guard readAssociations(ipma) else { return nil }
            }
            for child in children {
                switch child.type {
                case "iinf": guard readInfos(child) else { return nil }
                case "iloc": guard readLocations(child) else { return nil }
                case "iref": guard readReferences(child) else { return nil }
                default: continue
                }
            }
        }

        private mutating func readInfos(_ iinf: Box) -> Bool {
            var reader = BoxReader(data, range: iinf.body)
            guard let version = reader.integer(1), reader.skip(3), reader.skip(version == 0 ? 2 : 4),
                let entries = reader.boxes()
            else { return false }
            for infe in entries where infe.type == "infe" {
                var entry = BoxReader(data, range: infe.body)
                guard let entryVersion = entry.integer(1), entry.skip(3), entryVersion >= 2,
                    let id = entry.integer(entryVersion == 2 ? 2 : 4), entry.skip(2), let type = entry.integer(4)
                else { continue }
                infos[id] = infe.whole
                itemTypes[id] = String(
                    decoding: withUnsafeBytes(of: UInt32(type).bigEndian) { Array($0) },
                    as: UTF8.self
                )
            }
            return true
        }

        private mutating func readLocations(_ iloc: Box) -> Bool {
            var reader = BoxReader(data, range: iloc.body)
            guard let version = reader.integer(1), version <= 2, reader.skip(3),
                let sizes = reader.integer(1), let moreSizes = reader.integer(1),
                let count = reader.integer(version < 2 ? 2 : 4)
            else { return false }
            let (offsetSize, lengthSize, baseSize) = (sizes >> 4, sizes & 15, moreSizes >> 4)
            let indexSize = version == 0 ? 0 : moreSizes & 15
            for _ in 0..<count {
                guard let id = reader.integer(version < 2 ? 2 : 4) else { return false }
                var method = 0
                if version > 0 {
                    guard let field = reader.integer(2) else { return false }
                    method = field & 15
                }
                guard reader.skip(2), let base = reader.integer(baseSize), let extents = reader.integer(2) else {
                    return false
                }
                var ranges: [Range<Int>] = []
                for _ in 0..<extents {
                    guard reader.skip(indexSize), let offset = reader.integer(offsetSize),
                        let length = reader.integer(lengthSize)
                    else { return false }
                    let (start, overflow) = base.addingReportingOverflow(offset)
                    guard !overflow, start <= data.count, length > 0, length <= data.count - start else { return false }
                    ranges.append((data.startIndex + start)..<(data.startIndex + start + length))
                }
                if method == 0 { locations[id] = ranges }  // idat (1) and item (2) extents: not cut
            }
            return true
        }

        private mutating func readReferences(_ iref: Box) -> Bool {
            var reader = BoxReader(data, range: iref.body)
            guard let version = reader.integer(1), reader.skip(3), let references = reader.boxes() else { return false }
            let idSize = version == 0 ? 2 : 4
            for reference in references where reference.type == "thmb" {
                var entry = BoxReader(data, range: reference.body)
                guard let from = entry.integer(idSize), let count = entry.integer(2) else { return false }
                for _ in 0..<count {
                    guard let target = entry.integer(idSize) else { return false }
                    if target == primary, !thumbnails.contains(from) { thumbnails.append(from) }
                }
            }
            return true
        }

        private mutating func readAssociations(_ ipma: Box) -> Bool {
            var reader = BoxReader(data, range: ipma.body)
            guard let version = reader.integer(1), let flags = reader.integer(3), let count = reader.integer(4) else {
                return false
            }
            for _ in 0..<count {
                guard let id = reader.integer(version == 0 ? 2 : 4), let listed = reader.integer(1) else {
                    return false
                }
                var list: [(essential: Bool, index: Int)] = []
                for _ in 0..<listed {
                    if flags & 1 != 0 {
                        guard let value = reader.integer(2) else { return false }
                        list.append((value & 0x8000 != 0, value & 0x7FFF))
                    } else {
                        guard let value = reader.integer(1) else { return false }
                        list.append((value & 0x80 != 0, value & 0x7F))
                    }
                }
                associations[id, default: []] += list
            }
            return true
        }

        func propertyType(_ index: Int) -> String? {
            index >= 1 && index <= propertyTypes.count ? propertyTypes[index - 1] : nil
        }

        /// The standalone file of the first `av01` thumbnail this reader can cut.
        func thumbnailFile(ftyp: Data) -> Data? {
            guard
                let id = thumbnails.first(where: { itemTypes[$0] == "av01" && $0 <= 0xFFFF }),
                let info = infos[id], let extents = locations[id], !extents.isEmpty,
                var links = associations[id], links.contains(where: { propertyType($0.index) == "av1C" })
            else { return nil }
            if !links.contains(where: { propertyType($0.index) == "colr" }) {
                links += (associations[primary] ?? []).filter { propertyType($0.index) == "colr" }
            }
            guard links.count < 128, links.allSatisfy({ $0.index < 0x80 }) else { return nil }
            let bytes = extents.reduce(into: Data()) { $0.append(data[$1]) }
            var meta = Data()
            meta.append(data[handler])
            meta.append(Self.box("pitm", fullBox: 0, UInt16(id).bigEndianBytes))
            meta.append(Self.box("iinf", fullBox: 0, UInt16(1).bigEndianBytes + Array(data[info])))
            let entry =
                UInt16(id).bigEndianBytes + [UInt8(links.count)]
                + links.map { UInt8($0.index) | ($0.essential ? 0x80 : 0) }
            let ipma = Self.box("ipma", fullBox: 0, UInt32(1).bigEndianBytes + entry)
            meta.append(Self.box("iprp", fullBox: nil, Array(data[properties]) + Array(ipma)))
            // iloc version 0: 4-byte offsets and lengths, no base offset; one extent, in the mdat
            // that follows the meta box (its offset counts the iloc box itself, 30 bytes).
            let offset = ftyp.count + 12 + meta.count + 30 + 8
            guard offset + bytes.count <= Int(UInt32.max) else { return nil }
            let location: [UInt8] =
                [0x44, 0x00] + UInt16(1).bigEndianBytes + UInt16(id).bigEndianBytes + UInt16(0).bigEndianBytes
                + UInt16(1).bigEndianBytes + UInt32(offset).bigEndianBytes + UInt32(bytes.count).bigEndianBytes
            meta.append(Self.box("iloc", fullBox: 0, location))
            var file = Data(ftyp)
            file.append(Self.box("meta", fullBox: 0, Array(meta)))
            let mdatHeader: [UInt8] = UInt32(8 + bytes.count).bigEndianBytes + Array("mdat".utf8)
            file.append(contentsOf: mdatHeader)
            file.append(bytes)
            return file
        }

        /// A box of `type` around `body`, a full box (version 0, flags 0) when `fullBox` is set.
        static func box(_ type: String, fullBox version: UInt8?, _ body: [UInt8]) -> Data {
            let header: [UInt8] = version.map { [$0, 0, 0, 0] } ?? []
            var box = Data(UInt32(8 + header.count + body.count).bigEndianBytes)
            box.append(contentsOf: Array(type.utf8))
            box.append(contentsOf: header)
            box.append(contentsOf: body)
            return box
        }
    }
}

extension FixedWidthInteger {
    fileprivate var bigEndianBytes: [UInt8] { withUnsafeBytes(of: bigEndian) { Array($0) } }
}
