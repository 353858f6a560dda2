import CWebImageShims
import Foundation

/// Streams PNG data into libpng's push reader: previews after each completed Adam7 pass (known
/// pixels fill their pass blocks) or as rows arrive (rows not yet received are transparent). An
/// APNG previews its default image; the final result is a one-shot decode.
final class PNGIncrementalDecoder: IncrementalImageDecoding {
    private let options: ImageDecodingOptions
    private var decoder: OpaquePointer?
    private var fed = 0
    private var failed = false
    private var lastPreviewRows = 0
    private var lastPreviewPass = -1

    init(options: ImageDecodingOptions) {
        self.options = options
        decoder = wi_png_decoder_create(UInt64(options.maxPixelCount))
    }

    deinit {
        wi_png_decoder_destroy(decoder)
    }

    func update(_ data: Data, isComplete: Bool) throws(CoderError) -> DecodedImage? {
        if isComplete { return try PNGCoder().decode(data, options: options) }
        guard let decoder, !failed, data.count > fed else { return nil }
        let status = data.withUnsafeBytes { bytes in
            wi_png_decoder_feed(
                decoder,
                bytes.baseAddress!.assumingMemoryBound(to: UInt8.self).advanced(by: fed),
                bytes.count - fed
            )
        }
        fed = data.count
        guard status == WI_OK else {
            failed = true  // the final decode reports the error
            return nil
        }
        let state = wi_png_decoder_state(decoder)
        guard state.header_ready != 0, state.finished == 0, let pixels = state.pixels else { return nil }
        let width = Int(state.width)
        let height = Int(state.height)
        var bitmap: Bitmap
        if state.interlaced != 0 {
            // Show a pass once it is complete (rows_done reaches the bottom of the pass).
            let completedPass = Int(state.pass) - (Int(state.rows_done) >= height - 1 ? 0 : 1)
            guard completedPass > lastPreviewPass, completedPass >= 0 else { return nil }
            lastPreviewPass = completedPass
            bitmap = Bitmap(
                width: width,
                height: height,
                hasAlpha: true,
                pixels: Array(UnsafeBufferPointer(start: pixels, count: width * height * 4))
            )
            Self.fillAdam7Blocks(&bitmap, afterPass: completedPass)
        } else {
            let rows = Int(state.rows_done)
            guard rows > lastPreviewRows, rows < height else { return nil }
            lastPreviewRows = rows
            bitmap = Bitmap(
                width: width,
                height: height,
                hasAlpha: true,
                pixels: Array(UnsafeBufferPointer(start: pixels, count: width * height * 4))
            )
        }
        let image = DecodedImage(
            frames: [.init(bitmap: bitmap)],
            format: .png,
            isPartial: true,
            colorProfile: PNGCoder.embeddedProfile(decoder, options: options)
        )
        // A preview gets the time budget of its own (ImageDecodingOptions.maxDecodeDuration).
        return try (consume image).finished(with: options, deadline: CodingDeadline(options))
    }

    /// After Adam7 pass `pass` (0-based), the known pixels lie on a grid; each fills its cell.
    static func fillAdam7Blocks(_ bitmap: inout Bitmap, afterPass pass: Int) {
        let grids = [(8, 8), (4, 8), (4, 4), (2, 4), (2, 2), (1, 2), (1, 1)]
        let (cellWidth, cellHeight) = grids[min(pass, 6)]
        guard cellWidth > 1 || cellHeight > 1 else { return }
        let width = bitmap.width
        let height = bitmap.height
        bitmap.pixels.withUnsafeMutableBytes { raw in
            let pixels = raw.bindMemory(to: UInt32.self)
            for y in 0..<height {
                let sourceRow = (y - y % cellHeight) * width
                for x in 0..<width {
                    pixels[y * width + x] = pixels[sourceRow + x - x % cellWidth]
                }
            }
        }
    }
}
