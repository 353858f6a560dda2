import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("webimage memory footprint", .timeLimit(.minutes(2)))
struct MemoryFootprintTests {
    /// Twelve distinct flat-colour 3000×2000 JPEGs in `folder` (baseline or progressive); their URLs.
    private func writePhotos(to folder: TemporaryDirectory, progressive: Bool) throws -> [String] {
        try (1...12).map { number in
            // Flat colours keep the files small; the decoded bitmap is 24 MB whatever they show.
            var pixels = [UInt8](repeating: UInt8(number * 20), count: 3000 * 2000 * 4)
            pixels.replaceSubrange(0..<4, with: [UInt8(number), 0, 0, 255])
            let image = DecodedImage(
                bitmap: Bitmap(width: 3000, height: 2000, hasAlpha: false, pixels: pixels),
                format: .jpeg
            )
            let file = folder.file("photo\(number)\(progressive ? "-progressive" : "").jpg")
            try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 0.8, progressive: progressive))
                .write(to: file)
            return file.absoluteString
        }
    }

    /// Three loads at a time and no memory cache (see below).
    private let fetchArguments = ["fetch", "--json", "--no-disk-cache", "--memory-cache", "0", "--concurrency", "3"]

    // Before: 349 MB (a 512 MB memory cache and every decode's bitmap kept by the allocator),
    // then 155–215 MB (decodes on DispatchQueue.global() starved the tasks that drop each image,
    // so up to five 24 MB bitmaps were alive at once).
    @Test("Twelve distinct 3000×2000 JPEGs: the process peaks well under what keeping them would take")
    func twelveLargeImages() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-memory")
        defer { folder.remove() }
        let urls = try writePhotos(to: folder, progressive: false)
        // Three loads at a time and no memory cache: what can be resident is the bitmaps of the
        // three loads (two decoding, each with the decoder's transient buffers) and the process:
        // 90–94 MB alone, beside `stress-ng --cpu 16`, and inside the full codec pass (measured
        // with GNU time; the 152–256 MB seen before came from `wait4`, which folded this test
        // process's own peak into the child's). Twelve bitmaps are 288 MB: a leak, or an
        // allocator keeping freed bitmaps, fails the line with a wide margin for other machines.
        let run = try await CLIRunner.peakResidentMemory(fetchArguments + urls)
        #expect(run.status == 0)
        #expect(run.peakKiB < 170 * 1024, "peak resident memory \(run.peakKiB / 1024) MB")
        #expect(run.peakKiB > 24 * 1024, "at least one decoded bitmap was resident: the figure is real")
    }

    // A progressive decode holds every coefficient (18 MB here) besides its rows. Before the
    // decoder handed back the rows its output had passed, these twelve peaked 28–36 MB above the
    // same pictures in baseline files (85–90 MB); since, within a few MB of them (88–90 against
    // 89–94). Both runs in one test, so the machine and its load are the same.
    @Test("Twelve progressive 3000×2000 JPEGs peak about where the same pictures in baseline files do")
    func progressiveImagesPeakAsBaselineOnes() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-memory-progressive")
        defer { folder.remove() }
        let baseline = try await CLIRunner.peakResidentMemory(
            fetchArguments + writePhotos(to: folder, progressive: false)
        )
        let progressive = try await CLIRunner.peakResidentMemory(
            fetchArguments + writePhotos(to: folder, progressive: true)
        )
        #expect(baseline.status == 0 && progressive.status == 0)
        #expect(
            progressive.peakKiB < baseline.peakKiB + 16 * 1024,
            "progressive files peaked at \(progressive.peakKiB / 1024) MB, baseline ones at \(baseline.peakKiB / 1024) MB"
        )
    }
}
