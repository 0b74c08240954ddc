/// A rational time value, like Core Media's `CMTime`: `value / timescale` seconds.
///
/// Used for presentation timestamps and frame durations. Value type; thread-safe.
///
/// Every operation is total: numbers from files, drivers or users never trap here. Results
/// that do not fit saturate (to `Int64.max`/`.min` units), NaN seconds become zero, and frame
/// rates are clamped into `frameRateLimits`. Inputs are range-checked where they enter (CLI
/// options, readers); this type only guarantees that what slips through cannot crash.
public struct MediaTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The numerator.
    public var value: Int64
    /// Units per second (the denominator). Always positive.
    public var timescale: Int32

    /// Creates `value / timescale` seconds. A negative timescale flips the sign of `value`; a
    /// zero timescale (a division by zero) saturates to the largest time of `value`'s sign.
    public init(value: Int64, timescale: Int32) {
        if timescale > 0 {
            (self.value, self.timescale) = (value, timescale)
        } else if timescale < 0 {
            self.value = value == .min ? .max : -value
            self.timescale = timescale == .min ? .max : -timescale
        } else {
            (self.value, self.timescale) = (value > 0 ? .max : value < 0 ? .min : 0, 1)
        }
    }

    /// Creates a time from seconds at a given timescale (default: microseconds); ±infinity and
    /// times too long for the timescale saturate, NaN gives zero.
    public init(seconds: Double, preferredTimescale: Int32 = 1_000_000) {
        let timescale = max(1, preferredTimescale)
        self.init(value: Self.saturatingInt64(seconds * Double(timescale)), timescale: timescale)
    }

    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)

    /// The time in seconds.
    public var seconds: Double { Double(value) / Double(timescale) }

    /// The frame rates `frameDuration(framesPerSecond:)` represents: one frame a day to a
    /// million a second. Callers that take a rate from a user should refuse values outside it.
    public static let frameRateLimits: ClosedRange<Double> = (1.0 / 86_400)...1_000_000

    /// One frame at `framesPerSecond`, kept exact for common rates (30 → 1/30, 29.97 → 1001/30000).
    /// Rates outside `frameRateLimits` are clamped into it; NaN counts as the slowest rate.
    public static func frameDuration(framesPerSecond: Double) -> MediaTime {
        let fps = framesPerSecond.isNaN
            ? frameRateLimits.lowerBound
            : min(max(framesPerSecond, frameRateLimits.lowerBound), frameRateLimits.upperBound)
        let rounded = fps.rounded()
        // Both Int32 conversions are in range: fps ≤ 1e6, so fps × 1001 < Int32.max.
        if rounded >= 1, abs(fps - rounded) < 1e-6 { return MediaTime(value: 1, timescale: Int32(rounded)) }
        let ntsc = (fps * 1001).rounded()
        if ntsc >= 1, abs(fps * 1001 - ntsc) < 1e-3 { return MediaTime(value: 1001, timescale: Int32(ntsc)) }
        return MediaTime(seconds: 1 / fps)
    }

    /// Frames per second when this is a frame duration (infinity for a zero duration).
    public var framesPerSecond: Double { Double(timescale) / Double(value) }

    /// `self` multiplied by a whole number (frame index × frame duration), saturating.
    public func multiplied(by n: Int64) -> MediaTime {
        let (product, overflow) = value.multipliedReportingOverflow(by: n)
        guard overflow else { return MediaTime(value: product, timescale: timescale) }
        return MediaTime(value: (value < 0) == (n < 0) ? .max : .min, timescale: timescale)
    }

    /// `x` rounded to a whole number, clamped into Int64 (NaN → 0).
    static func saturatingInt64(_ x: Double) -> Int64 {
        if x.isNaN { return 0 }
        // 2^63 is exactly representable; every Double below it converts without trapping.
        if x >= 0x1p63 { return .max }
        if x <= -0x1p63 { return .min }
        return Int64(x.rounded())
    }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        Int128(lhs.value) * Int128(rhs.timescale) < Int128(rhs.value) * Int128(lhs.timescale)
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        Int128(lhs.value) * Int128(rhs.timescale) == Int128(rhs.value) * Int128(lhs.timescale)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(seconds)
    }

    public var description: String { "\(value)/\(timescale) s" }
}
