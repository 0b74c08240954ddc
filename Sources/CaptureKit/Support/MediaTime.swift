/// A rational time value, like Core Media's `CMTime`: `value / timescale` seconds.
///
/// Used for presentation timestamps and frame durations. Value type; thread-safe.
public struct MediaTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The numerator.
    public var value: Int64
    /// Units per second (the denominator). Always positive for valid times.
    public var timescale: Int32

    /// Creates `value / timescale` seconds.
    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "MediaTime needs a positive timescale")
        self.value = value
        self.timescale = timescale
    }

    /// Creates a time from seconds at a given timescale (default: microseconds).
    public init(seconds: Double, preferredTimescale: Int32 = 1_000_000) {
        self.init(value: Int64((seconds * Double(preferredTimescale)).rounded()), timescale: preferredTimescale)
    }

    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)

    /// The time in seconds.
    public var seconds: Double { Double(value) / Double(timescale) }

    /// One frame at `framesPerSecond`, kept exact for common rates (30 → 1/30, 29.97 → 1001/30000).
    public static func frameDuration(framesPerSecond fps: Double) -> MediaTime {
        precondition(fps > 0, "frame rate must be positive")
        let rounded = fps.rounded()
        if abs(fps - rounded) < 1e-6 { return MediaTime(value: 1, timescale: Int32(rounded)) }
        let ntsc = (fps * 1001).rounded()
        if abs(fps * 1001 - ntsc) < 1e-3 { return MediaTime(value: 1001, timescale: Int32(ntsc)) }
        return MediaTime(seconds: 1 / fps)
    }

    /// Frames per second when this is a frame duration.
    public var framesPerSecond: Double { Double(timescale) / Double(value) }

    /// `self` multiplied by a whole number (frame index × frame duration).
    public func multiplied(by n: Int64) -> MediaTime {
        MediaTime(value: value * n, timescale: timescale)
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
