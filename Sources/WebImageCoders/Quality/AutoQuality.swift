import Foundation

/// A quality chosen per image instead of a fixed number (imgproxy Pro's `autoquality`): the
/// highest quality whose file fits a byte budget, or the lowest whose pixels stay within a
/// difference from the unencoded image. Quality numbers mean different things per codec, so
/// ``range`` is per format in practice (see ``AutoQuality/defaultRange(for:)``).
public struct AutoQuality: Sendable, Hashable {
    /// What the quality is chosen for.
    public enum Method: String, Sendable, Hashable, CaseIterable {
        /// The highest quality whose file is at most ``AutoQuality/target`` bytes; below the
        /// range's lowest when even that is over the budget (the budget is kept if any quality
        /// keeps it).
        case size
        /// The quality whose ``ImageDifference/dssim(_:_:)`` to the unencoded image is
        /// ``AutoQuality/target`` (within ``AutoQuality/allowedError``; the lowest such).
        case dssim
        /// The same on libjxl's ``ImageDifference/butteraugli(_:_:)`` distance.
        case butteraugli
    }

    public var method: Method
    /// Bytes for ``Method/size``; the difference for the others (DSSIM 0.02, Butteraugli 1.5).
    public var target: Double
    /// The qualities the search may pick, within 1…100.
    public var range: ClosedRange<Int>
    /// How far from ``target`` a difference may be and still be taken at once. Default 0.001
    /// (imgproxy's, in DSSIM).
    public var allowedError: Double
    /// The most encodes one search makes (each encode at a quality not tried before). Default 6.
    public var maxEncodes: Int

    public init(
        method: Method,
        target: Double,
        range: ClosedRange<Int> = 70...80,
        allowedError: Double = 0.001,
        maxEncodes: Int = 6
    ) {
        self.method = method
        self.target = target
        self.range = max(1, min(range.lowerBound, 100))...max(1, min(range.upperBound, 100))
        self.allowedError = allowedError
        self.maxEncodes = max(1, maxEncodes)
    }

    /// imgproxy's defaults for `format`: 70…80, AVIF 60…65.
    public static func defaultRange(for format: ImageFormat) -> ClosedRange<Int> {
        format == .avif ? 60...65 : 70...80
    }
}

/// What an ``AutoQuality`` search chose.
public struct AutoQualityResult: Sendable, Hashable {
    /// The encoded image.
    public var data: Data
    /// The quality it was encoded at, 1–100.
    public var quality: Int
    /// Its measure: bytes for ``AutoQuality/Method/size``, else the difference.
    public var score: Double
    /// How many times the image was encoded to choose.
    public var encodes: Int
}

extension ImageCodersManager {
    /// Encodes `image` as `format` at the quality `autoQuality` chooses, measuring each trial
    /// on its own pixels (decoded back, first frame) against the unencoded first frame. The
    /// search predicts from the trials so far (a secant on the logarithm of the measure, a
    /// codec-typical slope before the second trial) and stops when a trial is within the
    /// allowed error, when the qualities either side of the answer are both tried, or after
    /// ``AutoQuality/maxEncodes`` encodes. Runs on the calling thread.
    /// - Throws: the encoder's or decoder's ``CoderError``; `limitExceeded` when `options`'
    ///   cancellation or time limit stops it.
    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions,
        autoQuality: AutoQuality
    ) throws(CoderError) -> AutoQualityResult {
        try encode(image, as: format, options: options, autoQuality: autoQuality, unlessLargerThan: nil)!
    }

    /// The same search, abandoned (`nil`) once it shows that its answer cannot be smaller than
    /// `sizeLimit` bytes: a trial that misses a difference target while already that large (the
    /// answer lies at a higher quality, so is larger still). How ``BestFormat`` drops a format
    /// that cannot win without finishing its search.
    func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions,
        autoQuality: AutoQuality,
        unlessLargerThan sizeLimit: Int?
    ) throws(CoderError) -> AutoQualityResult? {
        var search = QualitySearch(autoQuality: autoQuality, setting: Self.encoderSetting(for: format))
        search.sizeLimit = sizeLimit
        while let quality = search.nextQuality() {
            var encoding = options
            encoding.quality = Double(quality) / 100
            let data = try encode(image, as: format, options: encoding)
            let score =
                try autoQuality.method == .size ? Double(data.count) : difference(image, data, autoQuality.method)
            search.record(QualitySearch.Trial(quality: quality, score: score, data: data))
        }
        return search.isAbandoned ? nil : try search.result()
    }

    /// What the encoder of `format` makes of a quality (1–100): qualities with the same setting
    /// write the same file, so a search tries one of them at most. AVIF's 100 qualities fall on
    /// libavif's 64 quantizers.
    static func encoderSetting(for format: ImageFormat) -> @Sendable (Int) -> Int {
        guard format == .avif else { return { $0 } }
        return { quality in Int(AVIFEncoding.quantizer(forQuality: Double(quality) / 100)) }
    }

    /// The difference of `data` (decoded) from `image`'s first frame.
    private func difference(
        _ image: DecodedImage,
        _ data: Data,
        _ method: AutoQuality.Method
    ) throws(CoderError)
        -> Double
    {
        var decoding = ImageDecodingOptions(firstFrameOnly: true)
        decoding.colorPolicy = .ignore  // the pixels as written, as the reference holds them
        let decoded = try decode(data, options: decoding)
        return method == .butteraugli
            ? try ImageDifference.butteraugli(image.bitmap, decoded.bitmap)
            : try ImageDifference.dssim(image.bitmap, decoded.bitmap)
    }
}

/// The search behind ``ImageCodersManager/encode(_:as:options:autoQuality:)``: which quality
/// to try next, and which trial answers. The measure is monotonic in the quality: bytes grow
/// with it, differences shrink.
struct QualitySearch {
    struct Trial {
        var quality: Int
        var score: Double
        var data: Data
    }

    let autoQuality: AutoQuality
    /// The encoder's setting for a quality; qualities that share one are tried once.
    let setting: @Sendable (Int) -> Int
    /// Bytes the answer must stay under to be of use (see ``isAbandoned``); `nil`: no limit.
    var sizeLimit: Int?
    private(set) var trials: [Trial] = []

    init(autoQuality: AutoQuality, setting: @escaping @Sendable (Int) -> Int = { $0 }) {
        self.autoQuality = autoQuality
        self.setting = setting
    }

    private var range: ClosedRange<Int> { autoQuality.range }
    private var bySize: Bool { autoQuality.method == .size }

    /// Whether a trial meets the target: fits the budget, or differs no more than allowed.
    func passes(_ trial: Trial) -> Bool {
        bySize ? trial.score <= autoQuality.target : trial.score <= autoQuality.target + autoQuality.allowedError
    }

    /// The highest passing quality for size (bigger is better while it fits); the lowest for a
    /// difference (smaller files at the look asked for).
    private var bestPassing: Trial? {
        let passing = trials.filter(passes)
        return bySize ? passing.max { $0.quality < $1.quality } : passing.min { $0.quality < $1.quality }
    }

    /// Whether a difference search has shown its answer cannot fit ``sizeLimit``: a trial missed
    /// the target with at least that many bytes, and the answer lies above its quality.
    var isAbandoned: Bool {
        guard let sizeLimit, !bySize else { return false }
        return trials.contains { !passes($0) && $0.data.count >= sizeLimit }
    }

    /// The quality to encode next, `nil` when the search is done.
    func nextQuality() -> Int? {
        guard trials.count < autoQuality.maxEncodes, !isAbandoned else { return nil }
        guard let last = trials.last else { return firstGuess }
        if !bySize, abs(last.score - autoQuality.target) <= autoQuality.allowedError { return nil }
        if bySize, let best = bestPassing, best.score >= 0.95 * autoQuality.target { return nil }
        // The answer lies above the best passing quality and below the worst failing one (size),
        // or above the highest failing and at or below the lowest passing one (difference).
        let passing = trials.filter(passes)
        let failing = trials.filter { !passes($0) }
        let pass = bySize ? passing.max { $0.quality < $1.quality } : passing.min { $0.quality < $1.quality }
        let fail = bySize ? failing.min { $0.quality < $1.quality } : failing.max { $0.quality < $1.quality }
        // A byte budget is kept even below the range: once its lowest quality is over, the
        // search goes on down to quality 1.
        let belowRange = bySize && fail.map { $0.quality <= range.lowerBound } == true
        var low = belowRange ? 1 : range.lowerBound
        var high = range.upperBound
        if bySize {
            if let pass { low = pass.quality + 1 }
            if let fail { high = fail.quality - 1 }
        } else {
            if let fail { low = fail.quality + 1 }
            if let pass { high = pass.quality - 1 }
        }
        guard low <= high else { return nil }
        let tried = Set(trials.map { setting($0.quality) })
        let candidates = (low...high).filter { !tried.contains(setting($0)) }
        guard !candidates.isEmpty else { return nil }
        let predicted: Int
        if let pass, let fail {
            predicted = interpolated(pass, fail)
        } else {
            predicted = extrapolated(from: pass ?? fail ?? last)
        }
        // Clamped into the bracket; a guess at its very edge, once the bracket is known on both
        // sides, moves a third of the way in so a curved measure cannot stall the search.
        var next = min(max(predicted, low), high)
        if pass != nil, fail != nil, high - low > 2, next == low || next == high {
            next = next == low ? low + (high - low) / 3 : high - (high - low) / 3
        }
        return candidates.min { abs($0 - next) < abs($1 - next) }
    }

    /// The first trial: the top of the range for size (often it fits at once), else the
    /// middle of the range.
    private var firstGuess: Int { bySize ? range.upperBound : (range.lowerBound + range.upperBound + 1) / 2 }

    private var goal: Double { log(max(autoQuality.target, 1e-9)) }

    private static func logScore(_ trial: Trial) -> Double { log(max(trial.score, 1e-9)) }

    /// Where the logarithm of the measure reaches the target's between two trials either side.
    private func interpolated(_ one: Trial, _ two: Trial) -> Int {
        let (a, b) = (Self.logScore(one), Self.logScore(two))
        guard abs(b - a) > 1e-9 else { return (one.quality + two.quality) / 2 }
        let position = Double(one.quality) + (goal - a) / (b - a) * Double(two.quality - one.quality)
        return Int(position.rounded())
    }

    /// Where the measure reaches the target from `trial`, at the slope the two trials nearest
    /// the target show, or a typical one (bytes double in about 25 quality points; differences
    /// halve in about 15).
    private func extrapolated(from trial: Trial) -> Int {
        var slope = bySize ? 0.028 : -0.046
        let others = trials.filter { $0.quality != trial.quality }
        if let other = others.min(by: { abs(Self.logScore($0) - goal) < abs(Self.logScore($1) - goal) }) {
            let measured = (Self.logScore(other) - Self.logScore(trial)) / Double(other.quality - trial.quality)
            if measured.sign == slope.sign, abs(measured) > 1e-4 { slope = measured }
        }
        let position = Double(trial.quality) + (goal - Self.logScore(trial)) / slope
        // A size guess rounds down, towards the budget.
        return Int(max(-1e6, min(1e6, bySize ? position.rounded(.down) : position.rounded())))
    }

    /// The answer: the best passing trial, else the one nearest to passing (the lowest
    /// quality for size, the highest for a difference).
    func result() throws(CoderError) -> AutoQualityResult {
        guard !trials.isEmpty else { throw .invalidArgument("the quality search encoded nothing") }
        let chosen =
            bestPassing
            ?? (bySize ? trials.min { $0.quality < $1.quality }! : trials.max { $0.quality < $1.quality }!)
        return AutoQualityResult(data: chosen.data, quality: chosen.quality, score: chosen.score, encodes: trials.count)
    }

    mutating func record(_ trial: Trial) { trials.append(trial) }
}
