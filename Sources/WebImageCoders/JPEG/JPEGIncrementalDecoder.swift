import Foundation

/// Shows a JPEG while it downloads: a progressive JPEG after each completed scan, a baseline
/// JPEG as more rows arrive (the rest stays grey until then). Each preview decodes the bytes so
/// far; the final result is a one-shot decode of the whole data.
final class JPEGIncrementalDecoder: IncrementalImageDecoding {
    private let options: ImageDecodingOptions
    private let coder = JPEGCoder()
    private var markers = JPEGMarkerScanner()
    private var lastPreviewScans = 0
    private var lastPreviewSize = 0

    init(options: ImageDecodingOptions) {
        self.options = options
    }

    func update(_ data: Data, isComplete: Bool) throws(CoderError) -> DecodedImage? {
        if isComplete { return try coder.decode(data, options: options) }
        markers.scan(data)
        guard markers.startOfScanCount > 0 else { return nil }  // no pixels yet
        if markers.isProgressive {
            // A scan is complete once the next marker after it has arrived.
            let completedScans = markers.startOfScanCount - (markers.sawEndOfImage ? 0 : 1)
            guard completedScans > lastPreviewScans else { return nil }
            lastPreviewScans = completedScans
        } else {
            let grown = data.count - lastPreviewSize
            guard grown >= max(4096, lastPreviewSize / 8) else { return nil }
        }
        lastPreviewSize = data.count
        // A preview that fails (corrupt data so far) is simply not shown; the final decode reports.
        return try? coder.decode(data, options: options, allowTruncation: true)
    }
}

/// Counts JPEG markers in data that grows, resuming where it stopped.
struct JPEGMarkerScanner {
    private(set) var startOfScanCount = 0
    private(set) var isProgressive = false
    private(set) var sawEndOfImage = false
    private var offset = 2

    mutating func scan(_ data: Data) {
        data.withUnsafeBytes { bytes in
            // Stop one short of the end: a marker needs two bytes.
            while offset + 1 < bytes.count {
                guard bytes[offset] == 0xFF else {
                    offset += 1
                    continue
                }
                let marker = bytes[offset + 1]
                switch marker {
                case 0xC2, 0xC6, 0xCA, 0xCE: isProgressive = true  // progressive SOFs
                case 0xDA: startOfScanCount += 1
                case 0xD9: sawEndOfImage = true
                default: break
                }
                // Segments with a length: skip their payload (it may contain 0xFF bytes).
                let hasLength = marker != 0x00 && marker != 0xFF && !(0xD0...0xD9).contains(marker) && marker != 0x01
                if hasLength && marker != 0xDA {
                    guard offset + 3 < bytes.count else { return }
                    offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
                } else {
                    offset += marker == 0xFF ? 1 : 2
                }
            }
        }
    }
}
