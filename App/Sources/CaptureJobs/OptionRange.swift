import ArgumentParser

/// The one range check for numbers from the command line (options and `synthetic:` keys).
///
/// `ClosedRange.contains` is false for NaN, and every range is finite, so NaN, ±infinity and
/// absurd magnitudes are refused here, where they enter, instead of trapping in a conversion
/// later. The message names the option, the allowed range and what was given.
package enum OptionRange {
    /// Seconds of a timer or interval: up to a day.
    package static let seconds: ClosedRange<Double> = 0...86_400
    /// Seconds that must be above zero (a millisecond at least), up to a day.
    package static let positiveSeconds: ClosedRange<Double> = 0.001...86_400
    /// Frames per second a user may ask for (cameras, image folders, synthetic scenes).
    package static let framesPerSecond: ClosedRange<Double> = 0.01...1000
    /// Pixels in a frame side (--size, --view, --photo-size, synthetic:size).
    package static let pixels: ClosedRange<Int> = 1...16_384

    /// Throws a usage error unless `value` lies in `range`.
    package static func check<T: Comparable>(_ value: T, _ range: ClosedRange<T>, _ name: String, unit: String = "")
        throws(ValidationError)
    {
        guard !range.contains(value) else { return }
        let (low, high, got) = (plain(range.lowerBound), plain(range.upperBound), plain(value))
        throw ValidationError("\(name) must be \(low) to \(high)\(unit) (got \(got)).")
    }

    /// "86400" rather than "86400.0".
    private static func plain(_ value: some Comparable) -> String {
        let text = "\(value)"
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// `check` for an optional value: nil (not given) passes.
    package static func check<T: Comparable>(_ value: T?, _ range: ClosedRange<T>, _ name: String, unit: String = "")
        throws(ValidationError)
    {
        if let value { try check(value, range, name, unit: unit) }
    }
}
