/// What a video file's container declares (`VideoStreamInfo`), range-checked where it enters:
/// a value a hostile or broken header can make absurd is either sane here or `nil` (unknown),
/// and a frame size no decoder could deliver is a typed error. Nothing past this reads the raw
/// numbers.
struct VideoContainerInfo: Sendable, Equatable {
    /// Frames per second are believed from 1 per day up to this; beyond, no camera or encoder
    /// produced them (an AVI declaring a 1/4e9 s frame reads as 4e9 fps).
    static let maximumFrameRate = 1000.0
    /// More frames than this (over a year at 30 fps) is a broken header, not a video.
    static let maximumFrameCount = 1_000_000_000.0
    /// Start times and durations are believed up to this many seconds (over 30 years).
    static let maximumSeconds = 1e9

    let width: Int
    let height: Int
    /// The declared rate, or `nil` when missing or absurd: timestamps then come from the
    /// container's positions alone.
    let framesPerSecond: Double?
    /// OpenCV's frame count (the header's, else duration × rate), or `nil` when missing or absurd.
    let frameCount: Int?
    /// The stream header's own frame count (AVI's `dwLength`, MP4's sample count), or `nil` when
    /// it has none or it is absurd. A cut AVI keeps it while FFmpeg shortens the duration to
    /// the frames it finds, so truncation is judged by it first.
    let declaredFrames: Int?
    /// The container's clock at its start (FFmpeg's `start_time`; may be negative), or `nil`.
    let startSeconds: Double?
    /// The container's duration (FFmpeg's `duration`), or `nil` when missing or longer than
    /// `maximumFrameCount` frames: no time-based truncation check.
    let durationSeconds: Double?
    let fourCC: UInt32

    /// - Throws: `.cannotOpenVideo` when the frame size is missing, zero, negative or not a whole
    ///   number; `.imageTooLarge` when a frame would have more than `maximumPixels` pixels.
    init(_ raw: VideoStreamInfo, path: String, maximumPixels: Int = ImageFolderSource.maximumPixels) throws(CaptureError) {
        guard let width = Self.wholeNumber(raw.width, in: 1...Double(Int32.max)),
              let height = Self.wholeNumber(raw.height, in: 1...Double(Int32.max))
        else {
            throw CaptureError(
                .cannotOpenVideo,
                "\(path) declares no usable frame size (\(raw.width)x\(raw.height)): the file is corrupt or has no video stream",
                path: path)
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > maximumPixels {
            throw CaptureError(
                .imageTooLarge,
                "\(path) declares \(width)x\(height) frames, over the limit of \(maximumPixels) pixels "
                    + "on decoded images: set CVCAM_MAX_IMAGE_PIXELS to raise it", path: path)
        }
        self.width = width
        self.height = height
        let fpsRange = MediaTime.frameRateLimits.lowerBound...Self.maximumFrameRate
        framesPerSecond = fpsRange.contains(raw.fps) ? raw.fps : nil
        frameCount = Self.wholeNumber(raw.frameCount, in: 1...Self.maximumFrameCount)
        declaredFrames = Self.wholeNumber(raw.declaredFrames, in: 1...Self.maximumFrameCount)
        startSeconds = abs(raw.startSeconds) <= Self.maximumSeconds ? raw.startSeconds : nil
        // A duration holding more frames than a believable count comes from the same broken header.
        let duration = raw.durationSeconds
        let framesInDuration = duration * (framesPerSecond ?? 30)
        durationSeconds = duration > 0 && duration <= Self.maximumSeconds && framesInDuration <= Self.maximumFrameCount ? duration : nil
        fourCC = raw.fourcc
    }

    /// `value` as an Int when it is in `range` (NaN never is); fractions are rounded down.
    private static func wholeNumber(_ value: Double, in range: ClosedRange<Double>) -> Int? {
        range.contains(value) ? Int(value.rounded(.down)) : nil
    }

    /// Whether a stream whose last frame came `lastFrame` seconds after its start ended early:
    /// more than a frame of rounding short of the container's end. Muxers write the duration
    /// either from the start time or from 0 (FFmpeg's Matroska muxer with a 1 h clock writes
    /// 3602 s for 2 s of video), so the earlier of the two ends is the one that must be reached.
    /// A frame count the stream header itself declares is checked first (FFmpeg derives the
    /// duration of a cut AVI from the frames left); without a duration, OpenCV's count is used.
    func endedEarly(lastFrame: Double, framesRead: Int, frameDuration: Double) -> Bool {
        unreachedEnd(lastFrame: lastFrame, framesRead: framesRead, frameDuration: frameDuration) != nil
    }

    /// What the container declares that the stream did not reach ("10 frames", "a 5.0 s
    /// duration"), by the rule of `endedEarly`; nil when it ended where it should.
    func unreachedEnd(lastFrame: Double, framesRead: Int, frameDuration: Double) -> String? {
        if let declaredFrames, declaredFrames > 1, framesRead < declaredFrames - 1 { return "\(declaredFrames) frames" }
        if let durationSeconds {
            let end = durationSeconds - max(startSeconds ?? 0, 0)
            return lastFrame + 2 * frameDuration < end ? "a \(durationSeconds) s duration" : nil
        }
        if let frameCount, frameCount > 1, framesRead < frameCount - 1 { return "\(frameCount) frames" }
        return nil
    }
}
