import Foundation
import WebImage

// What the benchmark executables share: arguments, medians, timed batches of loads and a
// photo-like JPEG.

/// The integer after `name` on the command line, else `value`.
public func argument(_ name: String, default value: Int) -> Int {
    CommandLine.arguments.firstIndex(of: name).flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? value
}

/// `duration` in seconds.
public func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// The middle value (the upper one of an even count).
public func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// Seconds for `count` loads, `width` at a time (a new one starts as each ends).
public func timeLoads(
    count: Int,
    width: Int,
    _ load: @escaping @Sendable (Int) async throws -> Void
) async throws -> Double {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(width, count) {
            let index = next
            group.addTask { try await load(index) }
            next += 1
        }
        while try await group.next() != nil {
            if next < count {
                let index = next
                group.addTask { try await load(index) }
                next += 1
            }
        }
    }
    return seconds(ContinuousClock.now - start)
}

/// A photo-like JPEG: smooth gradients with grain, quality 85 (640×480 is about 100 KB),
/// baseline or progressive.
public func photoJPEG(width: Int = 640, height: Int = 480, progressive: Bool = false) throws -> Data {
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    var seed: UInt32 = 7
    for y in 0..<height {
        for x in 0..<width {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let grain = Double(seed >> 27) - 16
            let offset = (y * width + x) * 4
            pixels[offset] = UInt8(max(0, min(255, 128 + 90 * sin(Double(x) / 37 + Double(y) / 51) + grain)))
            pixels[offset + 1] = UInt8(max(0, min(255, 128 + 80 * sin(Double(x) / 23 - Double(y) / 41) + grain)))
            pixels[offset + 2] = UInt8(max(0, min(255, 128 + 70 * cos(Double(x + y) / 29) + grain)))
        }
    }
    let bitmap = Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    return try JPEGCoder().encode(
        DecodedImage(bitmap: bitmap, format: .jpeg),
        as: .jpeg,
        options: .init(quality: 0.85, progressive: progressive)
    )
}
