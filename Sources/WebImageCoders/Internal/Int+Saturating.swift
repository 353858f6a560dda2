extension Int {
    /// `value` (already rounded as the caller wants) as an `Int` within `bounds`, never trapping:
    /// past either bound (infinities included) it is that bound, and NaN counts as 0 (clamped into
    /// `bounds`). Sizes, offsets and limits computed from user numbers (a URL's `c:1e30:1e30`, a
    /// `--max-src-resolution` of 1e30, a `--resize` of `Int.max`) go through it.
    package init(saturating value: Double, in bounds: ClosedRange<Int>) {
        let clamped: Int
        if value.isNaN {
            clamped = 0
        } else if value >= Double(bounds.upperBound) {
            clamped = bounds.upperBound
        } else if value <= Double(bounds.lowerBound) {
            clamped = bounds.lowerBound
        } else {
            clamped = Int(value)
        }
        self = Swift.min(Swift.max(clamped, bounds.lowerBound), bounds.upperBound)
    }
}
