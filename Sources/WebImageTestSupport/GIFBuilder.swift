import CGIF
import Foundation

/// Writes GIFs through giflib with full control of each frame: position, size, palette,
/// disposal, transparency, delay, interlacing and the NETSCAPE loop extension.
public struct GIFBuilder {
    public struct Frame {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int
        /// Local colour table; `nil` uses the global one.
        public var palette: [(UInt8, UInt8, UInt8)]?
        /// 0/1 keep, 2 restore background, 3 restore previous.
        public var disposal: Int
        public var transparentIndex: Int?
        public var delayCentiseconds: Int
        public var interlaced: Bool
        /// Colour index of each pixel, row by row.
        public var indices: [UInt8]

        // shape: a test builder: every field of the file it writes is a defaulted parameter
        public init(
            x: Int = 0,
            y: Int = 0,
            width: Int,
            height: Int,
            palette: [(UInt8, UInt8, UInt8)]? = nil,
            disposal: Int = 1,
            transparentIndex: Int? = nil,
            delayCentiseconds: Int = 10,
            interlaced: Bool = false,
            indices: [UInt8]
        ) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
            self.palette = palette
            self.disposal = disposal
            self.transparentIndex = transparentIndex
            self.delayCentiseconds = delayCentiseconds
            self.interlaced = interlaced
            self.indices = indices
        }
    }

    public var width: Int
    public var height: Int
    public var globalPalette: [(UInt8, UInt8, UInt8)]?
    /// The raw NETSCAPE repeat count (0 = forever); `nil` writes no loop extension.
    public var netscapeLoop: Int?

    public init(width: Int, height: Int, globalPalette: [(UInt8, UInt8, UInt8)]?, netscapeLoop: Int? = 0) {
        self.width = width
        self.height = height
        self.globalPalette = globalPalette
        self.netscapeLoop = netscapeLoop
    }

    final class Sink {
        var data = Data()
    }

    public func build(frames: [Frame]) -> Data {
        let sink = Sink()
        var error: Int32 = 0
        let gif = EGifOpen(Unmanaged.passUnretained(sink).toOpaque(), builderWrite, &error)!
        EGifSetGifVersion(gif, true)
        let global = globalPalette.map(Self.colorMap)
        EGifPutScreenDesc(gif, Int32(width), Int32(height), 8, 0, global)
        if let global { GifFreeMapObject(global) }
        if let loop = netscapeLoop {
            "NETSCAPE2.0".utf8CString.withUnsafeBufferPointer { name in
                EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE)
                EGifPutExtensionBlock(gif, 11, name.baseAddress)
            }
            var block: [UInt8] = [1, UInt8(loop & 0xFF), UInt8(loop >> 8)]
            EGifPutExtensionBlock(gif, 3, &block)
            EGifPutExtensionTrailer(gif)
        }
        for frame in frames {
            var control: [UInt8] = [
                UInt8(frame.disposal << 2 | (frame.transparentIndex != nil ? 1 : 0)),
                UInt8(frame.delayCentiseconds & 0xFF), UInt8(frame.delayCentiseconds >> 8),
                UInt8(frame.transparentIndex ?? 0),
            ]
            EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, &control)
            let local = frame.palette.map(Self.colorMap)
            EGifPutImageDesc(
                gif,
                Int32(frame.x),
                Int32(frame.y),
                Int32(frame.width),
                Int32(frame.height),
                frame.interlaced,
                local
            )
            if let local { GifFreeMapObject(local) }
            // giflib expects interlaced rows in pass order.
            var order = Array(0..<frame.height)
            if frame.interlaced {
                order = []
                for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
                    order += stride(from: start, to: frame.height, by: step)
                }
            }
            var indices = frame.indices
            for row in order {
                _ = indices.withUnsafeMutableBufferPointer {
                    EGifPutLine(gif, $0.baseAddress! + row * frame.width, Int32(frame.width))
                }
            }
        }
        EGifCloseFile(gif, &error)
        return withExtendedLifetime(sink) { sink.data }
    }

    private static func colorMap(_ colors: [(UInt8, UInt8, UInt8)]) -> UnsafeMutablePointer<ColorMapObject> {
        var size = 2
        while size < colors.count { size *= 2 }
        var entries = colors.map { GifColorType(Red: $0.0, Green: $0.1, Blue: $0.2) }
        entries += Array(repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: size - entries.count)
        return GifMakeMapObject(Int32(size), &entries)
    }
}

private func builderWrite(
    _ gif: UnsafeMutablePointer<GifFileType>?,
    _ bytes: UnsafePointer<GifByteType>?,
    _ count: Int32
) -> Int32 {
    guard let gif, let bytes, let user = gif.pointee.UserData else { return 0 }
    Unmanaged<GIFBuilder.Sink>.fromOpaque(user).takeUnretainedValue().data.append(bytes, count: Int(count))
    return count
}

extension GIFBuilder {
    /// An animation whose composition matters: a full checkered first frame, then patches a
    /// third of the canvas that move, with every disposal method, a transparent index on every
    /// fourth and delays of 20–90 ms; loops forever.
    public static func checkerAnimation(width: Int, height: Int, frames: Int) -> Data {
        let palette = (0..<16).map { (index: Int) -> (UInt8, UInt8, UInt8) in
            let level = UInt8(index * 16)
            return (level, 255 - level, UInt8((index * 73) & 0xFF))
        }
        let checkers = (0..<width * height).map { (index: Int) -> UInt8 in
            let (x, y) = (index % width, index / width)
            return UInt8((x / 4 + y / 4) % 2)
        }
        var list = [Frame(width: width, height: height, indices: checkers)]
        let (patchWidth, patchHeight) = (max(1, width / 3), max(1, height / 3))
        for number in 1..<max(1, frames) {
            list.append(
                Frame(
                    x: (number * 7) % (width - patchWidth + 1),
                    y: (number * 5) % (height - patchHeight + 1),
                    width: patchWidth,
                    height: patchHeight,
                    disposal: [1, 2, 3][number % 3],
                    transparentIndex: number % 4 == 0 ? 0 : nil,
                    delayCentiseconds: 2 + number % 8,
                    indices: (0..<patchWidth * patchHeight).map { (index: Int) -> UInt8 in UInt8((number + index) % 16)
                    }
                )
            )
        }
        return GIFBuilder(width: width, height: height, globalPalette: palette).build(frames: list)
    }
}
