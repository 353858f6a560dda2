import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("webimage memory footprint", .timeLimit(.minutes(2)))
struct MemoryFootprintTests {
    // Before: 349 MB (a 512 MB memory cache and every decode's bitmap kept by the allocator),
    // then 155–215 MB (decodes on DispatchQueue.global() starved the tasks that drop each image,
    // so up to five 24 MB bitmaps were alive at once).
    @Test("Twelve distinct 3000×2000 JPEGs: the process peaks well under what keeping them would take")
    func twelveLargeImages() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-memory")
        defer { folder.remove() }
        var urls: [String] = []
        for number in 1...12 {
            // Flat colours keep the files small; the decoded bitmap is 24 MB whatever they show.
            var pixels = [UInt8](repeating: UInt8(number * 20), count: 3000 * 2000 * 4)
            pixels.replaceSubrange(0..<4, with: [UInt8(number), 0, 0, 255])
            let image = DecodedImage(
                bitmap: Bitmap(width: 3000, height: 2000, hasAlpha: false, pixels: pixels),
                format: .jpeg
            )
            let file = folder.file("photo\(number).jpg")
            try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 0.8)).write(to: file)
            urls.append(file.absoluteString)
        }
        // Three loads at a time and no memory cache: what can be resident is the bitmaps of the
        // three loads (two decoding, each with the decoder's transient buffers) and the process:
        // 90–94 MB alone, beside `stress-ng --cpu 16`, and inside the full codec pass (measured
        // with GNU time; the 152–256 MB seen before came from `wait4`, which folded this test
        // process's own peak into the child's). Twelve bitmaps are 288 MB: a leak, or an
        // allocator keeping freed bitmaps, fails the line with a wide margin for other machines.
        let run = try await CLIRunner.peakResidentMemory(
            ["fetch", "--json", "--no-disk-cache", "--memory-cache", "0", "--concurrency", "3"] + urls
        )
        #expect(run.status == 0)
        #expect(run.peakKiB < 170 * 1024, "peak resident memory \(run.peakKiB / 1024) MB")
        #expect(run.peakKiB > 24 * 1024, "at least one decoded bitmap was resident: the figure is real")
    }
}
