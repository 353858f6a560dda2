import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

@Suite("format:best in the library: the smallest candidate, found without finishing losing searches")
struct BestFormatTests {
    static let photo = DecodedImage(
        bitmap: GeneratedImages.photoLike(width: 320, height: 240, detail: 0.2),
        format: .png
    )

    @Test("With autoquality, best writes exactly the smallest of the candidates' own searches")
    func smallestOfSearches() throws {
        let formats: [ImageFormat] = [.avif, .webp, .jpeg]
        let search: @Sendable (ImageFormat) -> AutoQuality? = { _ in
            AutoQuality(method: .dssim, target: 0.02, range: 30...90, allowedError: 0.001)
        }
        let best = try BestFormat(
            candidates: formats,
            lossyTrials: 3,
            options: { _ in ImageEncodingOptions() },
            autoQuality: search
        )
        .encode(Self.photo)
        var sizes: [ImageFormat: Int] = [:]
        for format in formats {
            let result = try ImageCodersManager.shared.encode(
                Self.photo,
                as: format,
                options: ImageEncodingOptions(),
                autoQuality: try #require(search(format))
            )
            sizes[format] = result.data.count
        }
        let smallest = try #require(sizes.min { $0.value < $1.value })
        #expect(best.format == smallest.key && best.data.count == smallest.value, "\(best.format): \(sizes)")
    }

    @Test("A search stops once a trial misses its target with at least the bytes of the answer to beat")
    func abandonedSearch() throws {
        let autoQuality = AutoQuality(method: .dssim, target: 0.02, range: 30...90, allowedError: 0.001)
        // Bytes grow and the difference shrinks with the quality.
        func trial(_ quality: Int) -> QualitySearch.Trial {
            .init(quality: quality, score: 0.08 * exp(-0.03 * Double(quality - 30)), data: Data(count: 100 * quality))
        }
        var search = QualitySearch(autoQuality: autoQuality)
        search.sizeLimit = 5_000
        let first = try #require(search.nextQuality())
        search.record(trial(first))
        #expect(first == 60 && !search.passes(search.trials[0]))
        // Missed at 6,000 bytes: every quality that meets the target is larger still.
        #expect(search.isAbandoned && search.nextQuality() == nil)
        // A limit it may still get under, or none: the search goes on to its answer.
        for limit in [Int?.some(9_000), nil] {
            var open = QualitySearch(autoQuality: autoQuality)
            open.sizeLimit = limit
            while let quality = open.nextQuality() { open.record(trial(quality)) }
            let answer = try open.result().asTrial
            #expect(!open.isAbandoned && open.passes(answer), "limit \(String(describing: limit))")
        }
    }
}

extension AutoQualityResult {
    fileprivate var asTrial: QualitySearch.Trial { .init(quality: quality, score: score, data: data) }
}
