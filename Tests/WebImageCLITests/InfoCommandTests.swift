import Foundation
import Testing
import WebImageCoders
import WebImageTestEncoders
import WebImageTestSupport

@Suite("webimage info")
final class InfoCommandTests {
    /// One folder per test (Swift Testing makes a suite instance for each), removed on every path.
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "webimage-cli")
    }

    deinit { directory.remove() }

    func write(_ data: Data, _ name: String) throws -> String {
        let url = directory.file(name)
        try data.write(to: url)
        return url.path
    }

    @Test("JSON lines describe each image, in input order, exit 0")
    func describesImages() async throws {
        let jpeg = try write(
            JPEGCoder().encode(
                DecodedImage(
                    bitmap: GeneratedImages.gradient(width: 40, height: 30),
                    format: .jpeg,
                    orientation: .right
                ),
                as: .jpeg,
                options: .init()
            ),
            "photo.jpg"
        )
        let animation = GeneratedImages.animation(
            width: 12,
            height: 8,
            colors: [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 0, b: 255, a: 0)],
            loopCount: 0,
            format: .gif
        )
        let gif = try write(GIFCoder().encode(animation, as: .gif, options: .init()), "anim.gif")
        let result = try await CLIRunner.runDetached(["info", "--json", jpeg, gif])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let lines = try result.jsonLines()
        #expect(lines.count == 2)
        #expect(lines[0]["input"] as? String == jpeg)
        #expect(lines[0]["ok"] as? Bool == true)
        #expect(lines[0]["format"] as? String == "jpeg")
        #expect(lines[0]["width"] as? Int == 40 && lines[0]["height"] as? Int == 30)
        #expect(lines[0]["orientation"] as? Int == 6)
        #expect(lines[0]["frames"] as? Int == 1 && lines[0]["animated"] as? Bool == false)
        #expect(lines[0]["hasAlpha"] as? Bool == false)
        #expect((lines[0]["bytes"] as? Int ?? 0) > 0)
        #expect(lines[0]["decodeMs"] is Double || lines[0]["decodeMs"] is Int)
        #expect(lines[1]["format"] as? String == "gif")
        #expect(lines[1]["frames"] as? Int == 2 && lines[1]["animated"] as? Bool == true)
        #expect(lines[1]["loopCount"] as? Int == 0)
        #expect(lines[1]["hasAlpha"] as? Bool == true)
    }

    @Test("A failing input is reported in place and the exit status is 1")
    func failures() async throws {
        let good = try write(
            PNGCoder().encode(
                DecodedImage(bitmap: GeneratedImages.gradient(width: 4, height: 4), format: .png),
                as: .png,
                options: .init()
            ),
            "good.png"
        )
        let text = try write(Data("not an image".utf8), "notes.png")
        let missing = directory.file("missing.webp").path
        let result = try await CLIRunner.runDetached(["info", "--json", text, good, missing])
        #expect(result.status == 1)
        let lines = try result.jsonLines()
        #expect(lines.map { $0["input"] as? String } == [text, good, missing])
        #expect(lines.map { $0["ok"] as? Bool } == [false, true, false])
        let textError = try #require(lines[0]["error"] as? [String: Any])
        #expect(textError["code"] as? String == "unsupportedFormat")
        #expect((textError["message"] as? String)?.contains(text) == true)
        #expect(lines[0]["format"] as? String == "unknown")
        let missingError = try #require(lines[2]["error"] as? [String: Any])
        #expect(missingError["code"] as? String == "fileNotFound")
    }

    @Test("fetch and info give one damaged file the same decoder code (fetch as coderCode)")
    func sameCodeAsFetch() async throws {
        var png = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .png),
            as: .png,
            options: .init()
        )
        png.removeLast(png.count / 2)
        let cut = try write(png, "cut.png")
        let info = try await CLIRunner.runDetached(["info", "--json", cut])
        let infoError = try #require(try info.jsonLines().first?["error"] as? [String: Any])
        let fetch = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", directory.file("cache").path, URL(fileURLWithPath: cut).absoluteString,
        ])
        #expect(fetch.status == 9, "a decode failure: \(fetch.stderr)")
        let fetchError = try #require(try fetch.jsonLines().first?["error"] as? [String: Any])
        #expect(fetchError["code"] as? String == "badImageData")
        #expect(infoError["code"] as? String == "truncatedData")
        #expect(fetchError["coderCode"] as? String == infoError["code"] as? String)
    }

    @Test(
        "An image that cannot be decoded still gets its size from the header, with decoded: false; HEIC and JPEG XL decode"
    )
    func headerOnly() async throws {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(value >> (8 * $0) & 0xFF) } }
        // TIFF: little-endian header, one IFD with ImageWidth 6, ImageLength 8 (SHORTs) and a
        // compression scheme libtiff does not know (65000): the header reads, the decode cannot.
        let tiffBytes =
            Array("II".utf8) + le(42, 2) + le(8, 4) + le(3, 2) + le(256, 2) + le(3, 2) + le(1, 4) + le(6, 4)
            + le(257, 2) + le(3, 2) + le(1, 4) + le(8, 4) + le(259, 2) + le(3, 2) + le(1, 4) + le(65000, 4)
            + le(0, 4)
        let bmp = try write(Data(tiffBytes), "icon.tiff")
        let heic = try write(HEIFTestEncoder.encode(GeneratedImages.gradient(width: 40, height: 24)), "photo.heic")
        let jxl = try write(JXLTestEncoder.encode([GeneratedImages.gradient(width: 20, height: 10)]), "art.jxl")
        let result = try await CLIRunner.runDetached(["info", "--json", bmp, heic, jxl])
        #expect(result.status == 9)
        let lines = try result.jsonLines()
        #expect(lines.count == 3)
        #expect(lines[0]["format"] as? String == "tiff" && lines[0]["ok"] as? Bool == false)
        #expect(lines[0]["width"] as? Int == 6 && lines[0]["height"] as? Int == 8)
        #expect(lines[0]["decoded"] as? Bool == false)
        let error = try #require(lines[0]["error"] as? [String: Any])
        #expect(error["code"] as? String == "corruptData")
        #expect((error["message"] as? String)?.contains("corrupt tiff data") == true, "\(error)")
        #expect(lines[1]["format"] as? String == "heic" && lines[1]["width"] as? Int == 40)
        #expect(lines[1]["decoded"] as? Bool == true)
        #expect(lines[2]["format"] as? String == "jxl" && lines[2]["height"] as? Int == 10)
        let text = try await CLIRunner.runDetached(["info", bmp])
        #expect(
            text.stdout.isEmpty
                && text.stderr.contains(
                    "icon.tiff: tiff 6×8 (from the header; not decoded): error: corrupt tiff data"
                )
        )
    }

    /// A sparse file of `size` bytes that starts with `prefix` (no disk space, no write time).
    func sparseFile(_ name: String, size: Int64, prefix: Data) throws -> String {
        let path = try write(prefix, name)
        guard truncate(path, off_t(size)) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return path
    }

    // Before, both files were read whole: 155 s and 3.18 GB for the first, 2.13 GB for the second.
    @Test("Large files are judged from their first bytes and the size limit", .timeLimit(.minutes(1)))
    func largeFiles() async throws {
        let header = BlankPNG.make(width: 1, height: 1).prefix(33)  // signature + IHDR
        let hugePNG = try sparseFile("huge.png", size: 3 << 30, prefix: header)
        let sparse = try sparseFile("sparse.bin", size: 2 << 30, prefix: Data())
        let result = try await CLIRunner.runDetached(["info", "--json", hugePNG, sparse])
        #expect(result.status == 1)
        let lines = try result.jsonLines()
        #expect(lines.count == 2)
        let tooLarge = try #require(lines.first?["error"] as? [String: Any])
        #expect(lines.first?["format"] as? String == "png")
        #expect(lines.first?["bytes"] as? Int == 3 << 30)
        #expect(tooLarge["code"] as? String == "fileTooLarge")
        #expect((tooLarge["message"] as? String)?.contains("over the 134217728-byte limit") == true)
        let notImage = try #require(lines.last?["error"] as? [String: Any])
        #expect(notImage["code"] as? String == "unsupportedFormat")
        #expect(lines.last?["format"] as? String == "unknown")

        // Over the default limit, under a lifted one: a PNG header then zeros is corrupt, said at once.
        // (White space around the number and the unit is dropped.)
        let largePNG = try sparseFile("large.png", size: 200 << 20, prefix: header)
        let lifted = try await CLIRunner.runDetached(["info", "--json", "--max-file-size", " 256 MiB ", largePNG])
        let corrupt = try #require(try lifted.jsonLines().first?["error"] as? [String: Any])
        #expect(corrupt["code"] as? String == "corruptData")
        let usage = try await CLIRunner.runDetached(["info", "--max-file-size", "lots", hugePNG])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("'lots' is not a size such as 5000000, 512K, 20M or 1G"))
        #expect(usage.stderr.contains("--max-file-size"))
    }

    // Before, this took 26 s and 927 MB (debug build): the resize's pre-reduction factor was 0
    // for an extreme aspect ratio, so Lanczos ran millions of taps per output pixel.
    @Test("A thumbnail of a 1×20,000,000 PNG takes memory for its pixels only", .timeLimit(.minutes(5)))
    func extremeAspectRatioThumbnail() async throws {
        // Made on a thread of its own: 20 million rows to deflate would hold a pool thread.
        let tall = try write(try await onOwnThread { BlankPNG.make(width: 1, height: 20_000_000) }, "tall.png")
        let result = try await CLIRunner.runDetached(
            // Memory is the point, not time: a debug build on a busy machine needs more than 10 s.
            [
                "fetch", "--json", "--no-disk-cache", "--decode-timeout", "300", "--thumbnail", "64x64",
                URL(fileURLWithPath: tall).absoluteString,
            ],
            addressSpaceLimitKiB: 800_000  // the old code needed 927 MB resident; threads reserve 64 MB malloc arenas
        )
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(try result.jsonLines().first)
        #expect(line["ok"] as? Bool == true)
        #expect(line["width"] as? Int == 1 && line["height"] as? Int == 64)
    }

    @Test("--decode-timeout: a decode past it is a decode failure (exit 9) that says so")
    func decodeTimeout() async throws {
        // Two million rows: far more than a millisecond's work on any machine.
        let tall = try write(try await onOwnThread { BlankPNG.make(width: 1, height: 2_000_000) }, "tall.png")
        let result = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--decode-timeout", "0.001",
            URL(fileURLWithPath: tall).absoluteString,
        ])
        #expect(result.status == 9, "\(result.stderr)")
        let line = try #require(try result.jsonLines().first)
        let message = (line["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(line["ok"] as? Bool == false && message.contains("took longer than"), "\(line)")
    }

    @Test("Folders and FIFOs are refused without waiting", .timeLimit(.minutes(1)))
    func specialFiles() async throws {
        let fifo = directory.file("pipe.png").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let result = try await CLIRunner.runDetached(["info", "--json", fifo, directory.url.path])
        #expect(result.status == 1)
        let messages = try result.jsonLines().map { ($0["error"] as? [String: Any])?["message"] as? String ?? "" }
        #expect(messages.count == 2)
        #expect(messages.first?.contains("a FIFO, not a regular file") == true)
        #expect(messages.last?.contains("it is a folder") == true)
    }

    @Test("file:// URLs are read; http URLs are explained")
    func urls() async throws {
        let path = try write(
            PNGCoder().encode(
                DecodedImage(bitmap: GeneratedImages.gradient(width: 4, height: 4), format: .png),
                as: .png,
                options: .init()
            ),
            "a.png"
        )
        let result = try await CLIRunner.runDetached([
            "info", "--json", URL(fileURLWithPath: path).absoluteString, "http://127.0.0.1:9/x.png",
        ])
        let lines = try result.jsonLines()
        #expect(lines[0]["ok"] as? Bool == true)
        #expect((lines[1]["error"] as? [String: Any])?["code"] as? String == "unsupportedURL")
        #expect(result.status == 1)
    }

    @Test(
        "Usage errors exit 2 and print to stderr only",
        arguments: [["info"], ["info", "--bogus", "x"], ["frobnicate"]]
    )
    func usageErrors(arguments: [String]) async throws {
        let result = try await CLIRunner.runDetached(arguments)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.isEmpty)
    }

    @Test("Help exits 0 and shows an example")
    func help() async throws {
        let result = try await CLIRunner.runDetached(["info", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("webimage info --json"))
    }

    @Test("Plain output names each input")
    func plainText() async throws {
        let path = try write(
            WebPCoder().encode(
                DecodedImage(bitmap: GeneratedImages.gradient(width: 9, height: 7), format: .webp),
                as: .webp,
                options: .init()
            ),
            "pic.webp"
        )
        let result = try await CLIRunner.runDetached(["info", path])
        #expect(result.status == 0)
        #expect(result.stdout.contains("pic.webp: webp 9×7"))
    }
}
