import Foundation
import Testing
import WebImageCoders

@testable import WebImageServer

@Suite("Output format and entity tags")
struct OutputFormatTests {
    typealias Choice = OutputFormatChoice

    @Test("A requested format wins and never varies; negotiation picks AVIF, then WebP, and says so")
    func negotiation() {
        let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
        #expect(
            Choice(requested: .png, source: .jpeg, hasAlpha: false, accept: chrome, negotiation: .modern)
                == Choice(format: .png, variesWithAccept: false)
        )
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: chrome, negotiation: .modern)
                == Choice(format: .avif, variesWithAccept: true)
        )
        #expect(
            Choice(
                requested: nil,
                source: .jpeg,
                hasAlpha: false,
                accept: chrome,
                negotiation: Choice.NegotiatedFormats.modern.forSource(animated: false, encodesAVIF: false)
            )
            .format == .webp
        )
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: "image/webp", negotiation: .modern).format
                == .webp
        )
        #expect(
            Choice(
                requested: nil,
                source: .jpeg,
                hasAlpha: false,
                accept: "image/avif;q=0, image/webp;q=0",
                negotiation: .modern
            )
                == Choice(format: .jpeg, variesWithAccept: true)
        )
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: "*/*", negotiation: .modern).format == .jpeg
        )
        // Without negotiation, Accept is never read and never named in Vary.
        #expect(
            Choice(requested: nil, source: .gif, hasAlpha: true, accept: chrome, negotiation: [])
                == Choice(format: .gif, variesWithAccept: false)
        )
    }

    @Test("A source format we cannot write falls back to PNG with alpha and JPEG without")
    func fallback() {
        #expect(Choice(requested: nil, source: .heic, hasAlpha: false, accept: nil, negotiation: []).format == .jpeg)
        #expect(Choice(requested: nil, source: .heif, hasAlpha: true, accept: nil, negotiation: []).format == .png)
        #expect(Choice(requested: nil, source: .tiff, hasAlpha: true, accept: nil, negotiation: []).format == .tiff)
        #expect(Choice(requested: nil, source: .webp, hasAlpha: true, accept: nil, negotiation: []).format == .webp)
        #expect(
            Choice(requested: nil, source: .heic, hasAlpha: nil, accept: nil, negotiation: []).format == .unknown
        )
        #expect(Choice(requested: nil, source: .jpeg, hasAlpha: nil, accept: nil, negotiation: []).format == .jpeg)
    }

    @Test("Entity tags: stable for equal inputs, different for any change; If-None-Match forms")
    func etags() throws {
        let options = try ProcessingOptionsTests.options("rs:fill:100:100")
        func tag(
            _ options: ProcessingOptions,
            _ format: ImageFormat = .webp,
            source: String = "\"abc\"",
            encoder: String = "1"
        )
            -> String
        {
            ResultETag.make(
                options: options,
                format: format,
                quality: 80,
                sourceFingerprint: source,
                encoderVersion: encoder
            )
        }
        let base = tag(options)
        #expect(base == tag(options) && base.hasPrefix("\"") && base.hasSuffix("\"") && base.count == 34)
        #expect(base != tag(try ProcessingOptionsTests.options("rs:fill:100:101")))
        #expect(
            base != tag(options, .avif) && base != tag(options, source: "\"abd\"") && base != tag(options, encoder: "2")
        )
        #expect(ResultETag.matches(ifNoneMatch: base, etag: base))
        #expect(ResultETag.matches(ifNoneMatch: "\"other\", W/\(base)", etag: base))
        #expect(ResultETag.matches(ifNoneMatch: "*", etag: base))
        #expect(!ResultETag.matches(ifNoneMatch: "\"other\"", etag: base))
    }
}
