import ArgumentParser

/// `webimage serve`'s autoquality and `format:best` settings (imgproxy Pro's
/// `IMGPROXY_AUTOQUALITY_*`, `IMGPROXY_PREFERRED_FORMATS`, `IMGPROXY_BEST_FORMAT_*`).
struct ServeQualityArguments: ParsableArguments {
    @Option(
        name: .customLong("autoquality-method"),
        help: "Choose each result's quality: none (default), size, dssim, butteraugli (ml is dssim)."
    )
    var autoQualityMethod: String?

    @Option(
        name: .customLong("autoquality-target"),
        help: "Autoquality's target: bytes for size, the difference otherwise (default 0.02, DSSIM)."
    )
    var autoQualityTarget: Double?

    @Option(name: .customLong("autoquality-min"), help: "The lowest quality autoquality picks (default 70).")
    var autoQualityMin: Int?

    @Option(name: .customLong("autoquality-max"), help: "The highest quality autoquality picks (default 80).")
    var autoQualityMax: Int?

    @Option(
        name: .customLong("autoquality-format-min"),
        help: "The lowest quality for one format, FORMAT=Q (repeatable; default avif=60)."
    )
    var autoQualityFormatMin: [String] = []

    @Option(
        name: .customLong("autoquality-format-max"),
        help: "The highest quality for one format, FORMAT=Q (repeatable; default avif=65)."
    )
    var autoQualityFormatMax: [String] = []

    @Option(
        name: .customLong("autoquality-allowed-error"),
        help: "How far from the target a difference may be and be taken (default 0.001)."
    )
    var autoQualityAllowedError: Double?

    @Option(
        name: .customLong("preferred-formats"),
        help: "Formats format:best may write besides the negotiated one, comma-separated (default jpeg,png,gif)."
    )
    var preferredFormats: String?

    @Option(
        name: .customLong("best-format-complexity-threshold"),
        help: "format:best writes images less complex than this losslessly; 0 never (default 5.5)."
    )
    var bestFormatComplexityThreshold: Double?

    @Option(
        name: .customLong("best-format-max-resolution"),
        help: "Above this many megapixels format:best encodes one lossy format only; 0: no limit (default)."
    )
    var bestFormatMaxResolution: Double?

    @Flag(
        name: .customLong("best-format-by-default"),
        help: "A URL naming no format gets format:best."
    )
    var bestFormatByDefault = false

    @Flag(
        name: .customLong("best-format-allow-skips"),
        help: "format:best still sends skip_processing formats as they are."
    )
    var bestFormatAllowSkips = false
}
