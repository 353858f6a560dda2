import Foundation
import Synchronization
import Testing
@_spi(Testing) import WebImageCoders
import WebImageTestSupport

@testable import WebImageServer

/// Every format the proxy writes, stopped part-way as a client hang-up or a processing deadline
/// stops it: at each of the encoder's checks in turn, many times in one process. A stop must
/// end in `limitExceeded` ("… stopped") with nothing freed twice or leaked (the JPEG encoder's
/// stop once freed a buffer libjpeg had already freed, and aborted the process), and the next
/// encode must give the same bytes as before the stops.
@Suite("Encodes stopped part-way, for every output format", .timeLimit(.minutes(5)))
struct StoppedEncodeTests {
    /// A photo-like image (noise over a gradient): its JPEG outgrows libjpeg's first buffers.
    static let photo: DecodedImage = {
        var bitmap = GeneratedImages.noise(width: 720, height: 540)
        let gradient = GeneratedImages.gradient(width: 720, height: 540)
        for index in stride(from: 0, to: bitmap.pixels.count, by: 4) {
            bitmap.pixels[index] = UInt8((Int(bitmap.pixels[index]) + Int(gradient.pixels[index])) / 2)
        }
        return DecodedImage(bitmap: bitmap, format: .jpeg)
    }()

    /// ICO holds 256×256 at most; GIF's quantiser (unoptimised in debug builds) takes seconds
    /// over the photo's 390,000 colours, so it gets this size too.
    static let icon = DecodedImage(bitmap: GeneratedImages.noise(width: 256, height: 256), format: .png)

    static let formats = ProcessingOptions.outputFormats.sorted { $0.rawValue < $1.rawValue }

    /// The encodes this suite runs at once.
    static let slots = DispatchSemaphore(value: 2)

    static func image(for format: ImageFormat) -> DecodedImage { [.ico, .gif].contains(format) ? icon : photo }

    /// As the proxy encodes: the shared coders, its default quality, progressive JPEG and
    /// interlaced PNG (the encoders' longest paths), no time limit of the encoder's own.
    static func encode(_ format: ImageFormat, stoppingAt check: Int?) throws -> (Data, checks: Int) {
        let cancellation = CodingCancellation()
        cancellation.cancel(afterChecks: check ?? .max)
        var options = ImageEncodingOptions(quality: 0.8, progressive: true, maxEncodeDuration: nil)
        options.cancellation = cancellation
        let data = try ImageCodersManager.shared.encode(image(for: format), as: format, options: options)
        return (data, cancellation.checksMade)
    }

    @Test("Stopped at each of its checks, the encode says so; the next one is whole and the same", arguments: formats)
    func stoppedAtEveryCheck(format: ImageFormat) async throws {
        // Encoded on a thread of its own: a synchronous test would hold a cooperative-pool thread
        // for the whole run, and the suites beside it (servers in this process) need those.
        let run = try await onOwnThread {
            // Two formats at a time, as on the two cores: the nine at once starved the suites beside.
            Self.slots.wait()
            defer { Self.slots.signal() }
            return try Self.stopAtEveryCheck(format)
        }
        #expect(run.checks >= 1, "\(format) never checks its cancellation")
        #expect(run.problems.isEmpty, "\(format): \(run.problems)")
        #expect(run.stopped == run.attempts, "\(format): \(run.stopped) of \(run.attempts) encodes stopped")
        // Compared as a Bool: a failed #expect on two Data values would diff every byte.
        let same = run.again == run.whole
        #expect(same, "\(format): after \(run.stopped) stops, \(run.again.count) bytes, not \(run.whole.count)")
        let decoded = try ImageCodersManager.shared.decode(run.again)
        let expected = Self.image(for: format)
        #expect(decoded.width == expected.width && decoded.height == expected.height)
    }

    /// What one format's stops gave: the whole encode before and after, and what went wrong.
    struct StopRun: Sendable {
        var whole: Data
        var again: Data
        var checks: Int
        var attempts = 0
        var stopped = 0
        var problems: [String] = []
    }

    /// Encodes `format` whole, then stopped at every check up to 60 (evenly spread beyond: a
    /// progressive JPEG makes hundreds), then whole again.
    static func stopAtEveryCheck(_ format: ImageFormat) throws -> StopRun {
        let (whole, checks) = try encode(format, stoppingAt: nil)
        var run = StopRun(whole: whole, again: Data(), checks: checks)
        let step = max(1, checks / 60)
        for check in stride(from: 1, through: checks, by: step) {
            run.attempts += 1
            do {
                _ = try encode(format, stoppingAt: check)
                run.problems.append("stopped at check \(check) of \(checks), it encoded anyway")
            } catch let error as CoderError {
                if error.code == "limitExceeded" && "\(error)".contains("stopped") {
                    run.stopped += 1
                } else {
                    run.problems.append("stopped at check \(check): \(error)")
                }
            }
        }
        run.again = try encode(format, stoppingAt: nil).0
        return run
    }

    @Test("Encodes stopped at random checks on four threads at once leave the process whole")
    func stoppedConcurrently() async throws {
        let problems = try await onOwnThread {
            Self.slots.wait()
            defer { Self.slots.signal() }
            return try Self.stopConcurrently()
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Four threads, 24 encodes each, each stopped at a seeded random check: what went wrong.
    static func stopConcurrently() throws -> [String] {
        let formats: [ImageFormat] = [.jpeg, .png, .webp, .tiff]
        var checks: [ImageFormat: Int] = [:]
        for format in formats { checks[format] = try encode(format, stoppingAt: nil).checks }
        let counts = checks
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var generator = SplitMix(seed: UInt64(worker + 1))
            for round in 0..<24 {
                let format = formats[(worker + round) % formats.count]
                let check = Int(generator.next() % UInt64(counts[format]!)) + 1
                do {
                    _ = try encode(format, stoppingAt: check)
                    outcomes.withLock { $0.append("\(format) encoded although stopped at \(check)") }
                } catch {
                    if (error as? CoderError)?.code != "limitExceeded" {
                        outcomes.withLock { $0.append("\(format): \(error)") }
                    }
                }
            }
        }
        return outcomes.withLock { $0 }
    }
}

/// A small seeded generator, so a failing round can be run again.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
