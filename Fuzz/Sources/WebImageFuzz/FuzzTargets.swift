import Foundation
import WebImage
import WebImageHTTP

/// Every fuzz target: a name and what it does with one input. Each must survive any bytes:
/// errors are fine, crashes, hangs and unbounded memory are not.
enum FuzzTargets {
    /// Bounds that keep hostile inputs cheap (the library's own guards, made tighter).
    static let limits: ImageDecodingOptions = {
        var options = ImageDecodingOptions()
        options.maxPixelCount = 4_000_000
        options.maxFrameCount = 64
        options.maxAnimationBytes = 64 << 20
        return options
    }()

    static let all: [String: @Sendable (Data) -> Void] = [
        "sniff": { data in
            _ = ImageFormat(sniffing: data)
            _ = ImageHeader(data)?.decodedByteCount(with: limits)
        },
        "decode": { data in _ = try? ImageCodersManager.shared.decode(data, options: limits) },
        "jpeg": { data in _ = try? JPEGCoder().decode(data, options: limits) },
        "png": { data in _ = try? PNGCoder().decode(data, options: limits) },
        "gif": { data in _ = try? GIFCoder().decode(data, options: limits) },
        "webp": { data in _ = try? WebPCoder().decode(data, options: limits) },
        "avif": { data in
            _ = try? AVIFCoder().decode(data, options: limits)
            var thumbnail = limits  // the embedded thumbnail cut into a file of its own
            thumbnail.prefersEmbeddedThumbnail = true
            _ = try? AVIFCoder().decode(data, options: thumbnail)
            animatedFrames(data)  // a sequence a frame at a time, jumping back by key frames
        },
        // libheif reads AVIF too: AVIF seeds reach its container parser, HEIC seeds libde265.
        "heic": { data in _ = try? HEIFCoder().decode(data, options: limits) },
        "jxl": { data in
            _ = try? JXLCoder().decode(data, options: limits)
            _ = ImageHeader(data)
        },
        "bmp": { data in _ = try? BMPCoder().decode(data, options: limits) },
        "ico": { data in _ = try? ICOCoder().decode(data, options: limits) },
        "tiff": { data in _ = try? TIFFCoder().decode(data, options: limits) },
        "thumbnail": thumbnail,
        "animated": animatedFrames,
        "progressive": progressive,
        "disk-entry": diskEntry,
        "http": http,
        "proxy-path": ProxyFuzzTargets.path,
        "render": ProxyFuzzTargets.render,
    ]

    /// An animation a frame at a time: the first frames in order, then backwards (the frame
    /// source goes back to the start), as a player or a resizer would ask for them.
    static func animatedFrames(_ data: Data) {
        guard let animation = try? AnimatedImage(data: data, options: limits) else { return }
        let count = min(animation.frameCount, 8)
        for index in 0..<count { _ = try? animation.frame(at: index) }
        _ = try? animation.frame(at: count / 2)
        _ = try? animation.posterFrame()
    }

    /// Thumbnail decodes: the box size comes from the input's first bytes.
    static func thumbnail(_ data: Data) {
        guard data.count > 2 else { return }
        var options = limits
        options.thumbnailPixelSize = PixelSize(
            width: Int(data[data.startIndex]) + 1,
            height: Int(data[data.startIndex + 1]) + 1
        )
        _ = try? ImageCodersManager.shared.decode(data.dropFirst(2), options: options)
    }

    /// Incremental decoding fed the input in chunks whose sizes come from the input itself; when
    /// both succeed, the final image must equal the one-shot decode.
    static func progressive(_ data: Data) {
        guard data.count > 1 else { return }
        let step = Int(data[data.startIndex]) * 37 + 1
        let image = Data(data.dropFirst())
        guard let decoder = ImageCodersManager.shared.makeIncrementalDecoder(forPrefix: image, options: limits) else {
            return
        }
        var end = min(step, image.count)
        while end < image.count {
            _ = try? decoder.update(image.prefix(end), isComplete: false)
            end = min(image.count, end + step)
        }
        let final = try? decoder.update(image, isComplete: true)
        let oneShot = try? ImageCodersManager.shared.decode(image, options: limits)
        if let final, let oneShot, final.frames.map(\.bitmap) != oneShot.frames.map(\.bitmap) {
            fatalError("progressive result differs from the one-shot decode")
        }
    }

    /// The disk cache's entry reader on a file holding the input.
    static func diskEntry(_ data: Data) {
        let cache = DiskCache(directory: diskFolder)
        let key = "https://fuzz.example/entry.png"
        try? data.write(to: cache.fileURL(forKey: key))
        if let (bytes, entry) = cache.dataAndEntry(forKey: key) {
            precondition(bytes.count == entry.dataSize && bytes.count <= data.count)
        }
        _ = cache.data(forKey: key)
        _ = cache.entry(forKey: key)
        _ = cache.entries()
    }

    /// This process's scratch folder, removed when the fuzzer exits (libFuzzer ends with `exit`).
    static let diskFolder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FuzzTargets.diskFolder) }
        return folder
    }()

    /// Untrusted text the HTTP layer parses: response headers (content type, length, charset),
    /// `Set-Cookie` values, URLs and the CLI's option list.
    static func http(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var headers = HTTPFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                continue
            }
            headers.append(HTTPField(name: name, value: String(line[line.index(after: colon)...])))
        }
        let url = URL(string: lines.first ?? "") ?? URL(string: "https://fuzz.example/a/b.png")!
        let response = HTTPSession.Response(url: url, statusCode: 200, headers: headers)
        _ = response.mimeType
        _ = response.expectedContentLength
        _ = response.textEncodingName
        let store = HTTPCookieStore()
        store.store(setCookieHeaders: lines, from: url)
        _ = store.cookieHeader(for: url)
        _ = DiskCache.fileName(forKey: text)
    }
}
