import Foundation

/// Choosing a format from what a caller asks for: a size, a rate, a pixel format, or any mix.
///
/// Webcams offer the same size in several pixel formats at different rates (a UVC camera:
/// YUYV 1280x720 at 10 fps, MJPG 1280x720 at 30 fps, because raw frames fill the USB link), so
/// "the first format of that size" is often the slow one. This picks the format that reaches
/// the request and, among those, the fastest.
///
/// Threading: thread-safe (reads `formats` only).
extension CaptureDevice {
    /// What a caller asks of a format; nil fields are free.
    ///
    /// Value type; thread-safe.
    public struct FormatRequest: Sendable, Hashable, CustomStringConvertible {
        /// The frame size, exactly.
        public var dimensions: Dimensions?
        /// The frame rate, in frames per second (matched within 0.5 %, so 29.97 finds 30000/1001).
        public var framesPerSecond: Double?
        /// The four-character code ("MJPG", "YUYV", "NV12", "GREY").
        public var mediaSubType: String?

        public init(dimensions: Dimensions? = nil, framesPerSecond: Double? = nil, mediaSubType: String? = nil) {
            self.dimensions = dimensions
            self.framesPerSecond = framesPerSecond
            self.mediaSubType = mediaSubType
        }

        public var description: String {
            var parts: [String] = []
            if let mediaSubType { parts.append(mediaSubType) }
            if let dimensions { parts.append(dimensions.description) }
            if let framesPerSecond { parts.append("at \(FrameRateRange.text(framesPerSecond)) fps") }
            return parts.isEmpty ? "any format" : parts.joined(separator: " ")
        }
    }

    /// A format with the frame duration to stream it at.
    ///
    /// Value type; thread-safe.
    public struct FormatChoice: Sendable, Hashable {
        /// One of the device's `formats`.
        public var format: Format
        /// The requested rate's exact duration in `format`, or its fastest.
        public var frameDuration: MediaTime
    }

    /// The format that meets `request`: every given field must match. Among several, the
    /// fastest rate wins; then, when no size was asked for, the largest size; then a format that
    /// needs no decoding (YUYV before MJPG at the same size and rate); then the device's order.
    ///
    /// - Throws: `.formatNotSupported`, saying what the device offers instead.
    public func format(for request: FormatRequest) throws(CaptureError) -> FormatChoice {
        if let choice = Self.bestFormat(in: formats, for: request) { return choice }
        throw CaptureError(.formatNotSupported, "\(localizedName) cannot stream \(request); \(Self.offers(formats, near: request))")
    }

    /// `format(for:)` over a list of formats; nil when none meets the request.
    public static func bestFormat(in formats: [Format], for request: FormatRequest) -> FormatChoice? {
        let candidates = formats.enumerated().compactMap { index, format -> (Int, Format, MediaTime)? in
            if let d = request.dimensions, format.dimensions != d { return nil }
            if let s = request.mediaSubType, format.mediaSubType.uppercased() != s.uppercased() { return nil }
            if let fps = request.framesPerSecond {
                guard let duration = format.frameDuration(near: fps) else { return nil }
                return (index, format, duration)
            }
            guard let fastest = format.minFrameDuration else { return nil }
            return (index, format, fastest)
        }
        let best = candidates.min { a, b in
            let (rateA, rateB) = (a.1.minFrameDuration?.seconds ?? .infinity, b.1.minFrameDuration?.seconds ?? .infinity)
            if rateA != rateB { return rateA < rateB }
            if request.dimensions == nil, a.1.dimensions.area != b.1.dimensions.area {
                return a.1.dimensions.area > b.1.dimensions.area
            }
            let (rawA, rawB) = (a.1.pixelFormat != .bgr, b.1.pixelFormat != .bgr)  // .bgr: decoded by the source
            if rawA != rawB { return rawA }
            return a.0 < b.0
        }
        return best.map { FormatChoice(format: $0.1, frameDuration: $0.2) }
    }

    /// What the device offers nearest to a request it cannot meet, in one sentence.
    static func offers(_ formats: [Format], near request: FormatRequest) -> String {
        var pool = formats
        if let s = request.mediaSubType {
            let same = pool.filter { $0.mediaSubType.uppercased() == s.uppercased() }
            if same.isEmpty {
                return "it has no \(s) format; its formats are \(unique(formats.map(\.mediaSubType)).joined(separator: ", "))"
            }
            pool = same
        }
        if let d = request.dimensions {
            let same = pool.filter { $0.dimensions == d }
            if same.isEmpty {
                return "it offers \(unique(pool.map { $0.mediaSubType + " " + $0.dimensions.description }).joined(separator: ", "))"
            }
            pool = same
        }
        return "it offers " + pool.map(\.description).joined(separator: "; ")
    }

    private static func unique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }
}

extension CaptureDevice.Format {
    /// The frame duration of a supported rate within 0.5 % of `fps` (a discrete rate's own
    /// duration, so 30 finds 1/30 and 29.97 finds 1001/30000), nil when none is that close.
    public func frameDuration(near fps: Double) -> MediaTime? {
        guard fps.isFinite, fps > 0 else { return nil }
        for range in videoSupportedFrameRateRanges {
            let tolerance = 0.005 * fps
            if range.minFrameRate == range.maxFrameRate {
                if abs(range.maxFrameRate - fps) <= tolerance { return range.minFrameDuration }
            } else if fps >= range.minFrameRate - tolerance && fps <= range.maxFrameRate + tolerance {
                let wanted = MediaTime.frameDuration(framesPerSecond: fps)
                return min(max(wanted, range.minFrameDuration), range.maxFrameDuration)
            }
        }
        return nil
    }
}

extension CaptureDevice.FrameRateRange {
    /// A rate as people write it: "30", "29.970".
    static func text(_ fps: Double) -> String {
        fps == fps.rounded() && abs(fps) < 1e9 ? String(Int(fps)) : String(format: "%.3f", fps)
    }
}
