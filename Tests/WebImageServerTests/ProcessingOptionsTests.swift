import Foundation
import Testing
import WebImageCoders

@testable import WebImageServer

@Suite("Processing options and their geometry")
struct ProcessingOptionsTests {
    static func options(
        _ path: String,
        presets: [String: String] = [:],
        onlyPresets: Bool = false
    ) throws
        -> ProcessingOptions
    {
        let parsed = try ProxyPath(parsing: "/_/\(path)/plain/http://img.test/a.jpg")
        var table: [String: [ProxyOption]] = [:]
        for (name, text) in presets {
            table[name] = text.split(separator: "/").compactMap { ProxyOption(segment: $0) }
        }
        return try ProcessingOptions(parsed.options, presets: table, onlyPresets: onlyPresets)
    }

    static func size(_ path: String, source: PixelSize = PixelSize(width: 800, height: 600)) throws -> PixelSize {
        ResizeGeometry(source: source, options: try options(path)).output
    }

    @Test("Long and short names set the same fields; later options win; defaults are imgproxy's")
    func names() throws {
        let long = try Self.options("resize:fill:300:200:1:1/gravity:noea/quality:70/format:webp/dpr:2/rotate:90")
        let short = try Self.options("rs:fill:300:200:t:true/g:noea/q:70/f:webp/dpr:2/rot:90")
        #expect(long == short)
        #expect(long.resizingType == .fill && long.width == 300 && long.height == 200 && long.enlarge && long.extend)
        #expect(long.gravity == .northEast && long.quality == 70 && long.format == .webp && long.dpr == 2)
        #expect(try Self.options("w:100/w:200").width == 200)
        let defaults = try Self.options("cb:1")
        #expect(defaults.resizingType == .fit && !defaults.enlarge && defaults.autoRotate && defaults.stripMetadata)
        #expect(try Self.options("g:fp:0.25:0.75").gravity == .focusPoint(x: 0.25, y: 0.75))
        #expect(try Self.options("bg:ff8000").background == RGBA(r: 255, g: 128, b: 0))
        #expect(try Self.options("bg:1:2:3").background == RGBA(r: 1, g: 2, b: 3))
        #expect(try Self.options("ext:jpg").format == .jpeg)
        #expect(try Self.options("c:100:0.5:sowe").crop?.gravity == .southWest)
        #expect(long.canonicalDescription == short.canonicalDescription)
        #expect(long.canonicalDescription != (try Self.options("rs:fill:300:201:1:1")).canonicalDescription)
    }

    @Test(
        "Bad options are 400s naming the option",
        arguments: [
            ("dpr:0", "dpr"), ("dpr:-2", "dpr"), ("rot:45", "rotate"), ("q:101", "quality"),
            ("rs:stretch:1:1", "resizing type"),
            ("w:-1", "size"), ("el:maybe", "boolean"), ("g:up", "gravity"), ("g:fp:2:0", "fp"),
            ("f:svg", "cannot be written"),
            ("f:bmpx", "format"), ("bg:12345", "colour"), ("bl:abc", "number"),
            ("frobnicate:1", "unknown or unsupported option 'frobnicate'"), ("wm:2", "opacity"), ("t:x", "number"),
            ("z:0", "positive"),
            ("fq:jpeg", "pairs"), ("pd:-1", "size"), ("exar:1:sm", "smart"), ("g:sm:1:2", "no offsets"),
            ("w:1:2", "takes 1 arguments"), ("pr:nope", "no preset named 'nope'"),
        ]
    )
    func badOptions(path: String, fault: String) {
        #expect {
            try Self.options(path)
        } throws: { error in
            let error = error as? ProxyError
            return error?.status == 400 && error?.code == .badOption && error?.message.contains(fault) == true
        }
    }

    @Test("Presets: named, default applied first, nested, and only-presets refusing everything else")
    func presets() throws {
        let presets = ["default": "q:60", "thumb": "rs:fill:100:100/pr:sharp", "sharp": "sh:1"]
        let thumb = try Self.options("pr:thumb", presets: presets)
        #expect(thumb.quality == 60 && thumb.width == 100 && thumb.resizingType == .fill && thumb.sharpen == 1)
        #expect(try Self.options("q:90/pr:thumb", presets: presets).quality == 90, "default is applied first")
        #expect(try Self.options("pr:thumb", presets: presets, onlyPresets: true).width == 100)
        #expect(throws: ProxyError.self) { try Self.options("w:10", presets: presets, onlyPresets: true) }
        #expect(throws: ProxyError.self) { try Self.options("pr:loop", presets: ["loop": "pr:loop"]) }
    }

    // The figures for an 800×600 source, then imgproxy's own test tables for fill-down
    // (its 200×100 test image) and width/height alone.
    @Test("Sizes follow imgproxy 3's arithmetic")
    func sizes() throws {
        #expect(try Self.size("rs:fit:300:200") == PixelSize(width: 267, height: 200))
        #expect(try Self.size("rs:auto:200:300") == PixelSize(width: 200, height: 150))
        #expect(try Self.size("rs:fill:1000:1000") == PixelSize(width: 800, height: 600))
        #expect(try Self.size("rs:fill-down:1000:1000") == PixelSize(width: 600, height: 600))
        #expect(try Self.size("w:300") == PixelSize(width: 300, height: 225))
        #expect(try Self.size("h:300") == PixelSize(width: 400, height: 300))
        #expect(try Self.size("rs:fill:300:300") == PixelSize(width: 300, height: 300))
        #expect(try Self.size("rs:force:300:100") == PixelSize(width: 300, height: 100))
        #expect(try Self.size("rs:fit:1600:1200") == PixelSize(width: 800, height: 600), "never upscaled")
        #expect(try Self.size("rs:fit:1600:1200:1") == PixelSize(width: 1600, height: 1200), "enlarge")
        #expect(try Self.size("rs:fit:1000:1000:0:1") == PixelSize(width: 1000, height: 1000), "extend pads")
        #expect(try Self.size("rs:fit:300:200/dpr:2") == PixelSize(width: 533, height: 400))
        #expect(try Self.size("rs:fit:600:600/dpr:2") == PixelSize(width: 800, height: 600), "dpr never upscales")
        let small = PixelSize(width: 200, height: 100)
        for (box, expected) in [
            ((50, 50), (50, 50)), ((50, 20), (50, 20)), ((20, 50), (20, 50)), ((300, 300), (100, 100)),
            ((300, 125), (200, 83)), ((250, 300), (83, 100)), ((0, 50), (100, 50)), ((50, 0), (50, 25)),
            ((0, 200), (200, 100)), ((300, 0), (200, 100)),
        ] {
            let size = try Self.size("rs:fill-down:\(box.0):\(box.1)", source: small)
            #expect(size == PixelSize(width: expected.0, height: expected.1), "fill-down \(box)")
        }
        // Orientation 6 turns 800×600 into 600×800 before sizing; rot:90 turns it back.
        let options = try Self.options("w:300")
        #expect(
            ResizeGeometry(source: PixelSize(width: 800, height: 600), orientation: .right, options: options).output
                == PixelSize(width: 300, height: 400)
        )
        let turned = try Self.options("w:300/rot:90")
        #expect(
            ResizeGeometry(source: PixelSize(width: 800, height: 600), orientation: .right, options: turned).output
                == PixelSize(width: 300, height: 225)
        )
        // A crop is taken from the source before the resize.
        #expect(try Self.size("c:400:300/w:200") == PixelSize(width: 200, height: 150))
        #expect(try Self.size("c:0.5:0.5/w:200") == PixelSize(width: 200, height: 150))
    }
}
