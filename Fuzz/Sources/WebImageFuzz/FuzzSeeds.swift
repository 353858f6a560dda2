import Foundation
import WebImage
import WebImageTestEncoders

/// Seed inputs made with our own encoders: every format, still and animated, with and without
/// alpha, baseline and progressive, plus header-only and HTTP/cache-entry samples.
enum FuzzSeeds {
    static func write(to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let coders = ImageCodersManager.shared
        var index = 0
        func save(_ data: Data, _ name: String) throws {
            try data.write(to: folder.appendingPathComponent("seed-\(index)-\(name)"))
            index += 1
        }
        for (width, height) in [(1, 1), (17, 9), (64, 48)] {
            var bitmap = Bitmap(width: width, height: height, fill: RGBA(r: 200, g: 30, b: 90, a: 255))
            for x in 0..<width {
                bitmap[x, height / 2] = RGBA(r: UInt8(x * 3 % 256), g: 200, b: 10, a: UInt8(x * 7 % 256))
            }
            let still = DecodedImage(bitmap: bitmap, format: .png)
            try save(try coders.encode(still, as: .jpeg, options: .init(quality: 0.7)), "baseline.jpg")
            try save(
                try coders.encode(still, as: .jpeg, options: .init(quality: 0.7, progressive: true)),
                "progressive.jpg"
            )
            try save(try coders.encode(still, as: .png, options: .init()), "alpha.png")
            try save(try coders.encode(still, as: .webp, options: .init(quality: 0.6)), "lossy.webp")
            try save(try coders.encode(still, as: .webp, options: .init(lossless: true)), "lossless.webp")
            var second = bitmap
            second[0, 0] = RGBA(r: 0, g: 0, b: 255, a: 128)
            let animation = DecodedImage(
                frames: [.init(bitmap: bitmap, duration: 0.1), .init(bitmap: second, duration: 0.05)],
                loopCount: 0,
                format: .gif
            )
            try save(try coders.encode(animation, as: .gif, options: .init()), "animated.gif")
            try save(try coders.encode(animation, as: .webp, options: .init()), "animated.webp")
            try save(try coders.encode(still, as: .avif, options: .init(quality: 0.5)), "still.avif")
            try save(try coders.encode(animation, as: .avif, options: .init(quality: 0.5)), "animated.avif")
            try save(try HEIFTestEncoder.encode(bitmap, orientation: .right, lossless: false), "still.heic")
            if width >= 16 {  // libheif's thumbnail must be smaller than the image
                try save(
                    try HEIFTestEncoder.encode(
                        bitmap,
                        lossless: false,
                        thumbnail: second,
                        thumbnailBox: width / 2,
                        format: .avif
                    ),
                    "thumbnailed.avif"
                )
            }
            try save(try JXLTestEncoder.encode([bitmap], orientation: .left), "lossless.jxl")
            try save(try JXLTestEncoder.encode([bitmap], distance: 2), "lossy.jxl")
            try save(try JXLTestEncoder.encode([bitmap, second], durations: [100, 50]), "animated.jxl")
            try save(try coders.encode(still, as: .bmp, options: .init()), "opaque.bmp")
            try save(
                try coders.encode(DecodedImage(bitmap: second, format: .bmp), as: .bmp, options: .init()),
                "alpha.bmp"
            )
            try save(try coders.encode(still, as: .ico, options: .init()), "png.ico")
            try save(try coders.encode(still, as: .tiff, options: .init()), "deflate.tiff")
        }
        try save(
            Data(
                "Content-Type: image/png; charset=utf-8\nContent-Length: 42\nSet-Cookie: a=b; Path=/; Max-Age=60\n".utf8
            ),
            "headers.txt"
        )
        try save(
            Data(
                "https://example.com/a%20b/c.png?x=1#f\nSet-Cookie: id=1; Domain=example.com; Secure; HttpOnly\n".utf8
            ),
            "url.txt"
        )
        // Request paths (proxy-path) and render requests: a format byte, a stop byte, options.
        let paths = [
            "/sig/rs:fill:300:200:1/g:sm/q:70/plain/https://example.com/a%20b.jpg@webp",
            "/insecure/w:200/h:100/dpr:2/aHR0cHM6Ly9leGFtcGxlLmNvbS9hLmpwZw/cGF0aA.png",
            "/info/_/plain/local:///photos/a.png",
            "/_/pr:thumb/loop/c:50:40:nowe:5:5/ex:1:ce/pd:1:2:3:4/plain/s3://bucket/key.jpg@avif",
            "/_/t:10:FF00FF:1:1/bg:10:20:30/bl:2/sh:0.5/rot:270/ar:0/f:tiff/cb:x/plain/http://h/i.gif",
        ]
        for (number, path) in paths.enumerated() { try save(Data(path.utf8), "path-\(number).txt") }
        let renders: [(UInt8, UInt8, String)] = [
            (0, 0, "rs:fill:120:80/g:ce/q:55"),
            (1, 3, "rs:fit:200:0/el:1/pd:4:8/bg:ff0000"),
            (2, 9, "c:50:40:sm/bl:2/sh:1/rot:90/ex:1/w:64/h:64"),
            (3, 1, "t:10/anim/rs:auto:40:40/ar:1"),
            (4, 17, "zoom:1.5/dpr:2/mw:10/mh:10/ex:1:no:4:4/anim"),
            (5, 40, "rs:force:300:10/q:95"),
        ]
        for (number, (format, stop, options)) in renders.enumerated() {
            try save(Data([format, stop]) + Data(options.utf8), "render-\(number).bin")
        }
        let entryFolder = folder.appendingPathComponent(".entry")
        let cache = DiskCache(directory: entryFolder)
        try cache.store(
            Data([1, 2, 3, 4]),
            forKey: "https://fuzz.example/entry.png",
            metadata: DiskCacheMetadata(
                contentType: "image/png",
                etag: "\"e\"",
                lastModified: "now",
                extendedData: Data([9])
            )
        )
        try save(try Data(contentsOf: cache.fileURL(forKey: "https://fuzz.example/entry.png")), "entry.bin")
        try? FileManager.default.removeItem(at: entryFolder)
    }
}
