import ArgumentParser
import Foundation

/// Sizes and durations written the same way in every command: `12345`, `512K`, `20M`, `1G`
/// (powers of 1024; `KB`, `KiB` and lower case too); `90` (seconds), `500ms`, `30s`, `15m`,
/// `12h`, `7d`, `2w`. Used as `@Option(transform:)`, so a bad value is a usage error that names
/// the option and says what was expected.
enum Units {
    /// Bytes, at least 0.
    static func bytes(_ text: String) throws -> Int64 {
        let (number, unit) = split(text)
        let multipliers: [String: Int64] = [
            "": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
            "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
        ]
        guard let count = Int64(number), count >= 0, let multiplier = multipliers[unit] else {
            throw ValidationError("'\(text)' is not a size such as 5000000, 512K, 20M or 1G")
        }
        let bytes = count.multipliedReportingOverflow(by: multiplier)
        guard !bytes.overflow else { throw ValidationError("'\(text)' is too large a size") }
        return bytes.partialValue
    }

    /// The longest duration taken: 10⁹ seconds (about 31 years). Any longer would overflow the
    /// integer clocks the settings end up in (milliseconds, NIO's nanoseconds, a TTL's `Int`).
    static let longestSeconds = 1_000_000_000.0

    /// Seconds, from 0 to ``longestSeconds``.
    static func seconds(_ text: String) throws -> Double {
        let (number, unit) = split(text)
        let multipliers: [String: Double] = [
            "": 1, "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604_800,
        ]
        guard let value = Double(number), value >= 0, value.isFinite, let multiplier = multipliers[unit] else {
            throw ValidationError("'\(text)' is not a duration such as 30, 500ms, 30s, 15m, 12h or 7d")
        }
        guard value * multiplier <= longestSeconds else {
            throw ValidationError("'\(text)' is too long a duration (at most 1000000000 seconds, about 31 years)")
        }
        return value * multiplier
    }

    /// Positive seconds (a timeout).
    static func positiveSeconds(_ text: String) throws -> Double {
        let value = try seconds(text)
        guard value > 0 else { throw ValidationError("'\(text)' must be longer than 0") }
        return value
    }

    /// The leading number and the lower-cased unit after it, white space around either dropped.
    /// (Plain Swift: Foundation's `trimmingCharacters(in:)` bridges through NSString, a millisecond
    /// of every process's start for the options' default values.)
    private static func split(_ text: String) -> (number: Substring, unit: String) {
        let trimmed = trimmingWhitespace(text[...])
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        return (number, String(trimmingWhitespace(trimmed.dropFirst(number.count))).lowercased())
    }

    private static func trimmingWhitespace(_ text: Substring) -> Substring {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return text[text.endIndex...] }
        return text[first...last]
    }
}

extension Duration {
    /// The duration in seconds, as the command line writes it.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
