import Foundation

extension CaptureMetadataOutput {
    /// Motion detection, and detection of faces and codes gated by it. CaptureKit's own:
    /// AVFoundation has no equivalent (an `AVCaptureMetadataOutput` analyses every frame), which
    /// is why it is off by default.
    ///
    /// When enabled, every frame first goes to a motion stage (`MotionDetector`) that works on a
    /// small gray image (about `analysisWidth` pixels wide) reduced once from the frame's gray
    /// view, compares it with a background that adapts to slow changes and to global
    /// brightness steps, and reports the moving regions inside `rectOfInterest` and outside the
    /// `masks`. Then (`MotionGate`):
    /// - a frame with motion is analysed for faces and codes at once (no face or code in a
    ///   moving region is reported later than without gating), and so is every frame until
    ///   `endDelay` after the last one that moved;
    /// - a frame in which nothing moved is analysed only when `idleAnalysisInterval` has passed
    ///   since the last analysed frame (0: every frame, so motion is reported and nothing is
    ///   spared), so a code held still in view is still read, at that rate;
    /// - a global change (a light switched, auto exposure, the camera bumped) gets one analysed
    ///   frame and starts no motion;
    /// - the trackers count time spared as still as time an object stayed put
    ///   (`AnalysisFrame.stillThrough`), so a person standing still keeps their `faceID`.
    ///
    /// Motion is delivered as `MetadataEvent.motionStarted` / `.motionEnded` (never lost, even
    /// when the detectors skip the frame) and, on analysed frames with motion, as a
    /// `MetadataMotionObject` among the frame's objects.
    ///
    /// Cost: the motion stage is one gray view (shared with the code detector; free for YUYV,
    /// NV12 and gray frames), one `cv::resize` and a few passes over about 60 000 small pixels:
    /// well under a millisecond per 720p frame.
    ///
    /// Value type; thread-safe.
    public struct MotionDetection: Sendable, Hashable {
        /// Whether the motion stage runs (and gates detection).
        public var isEnabled: Bool
        /// Smallest change of a small pixel's brightness that counts (1…255).
        public var threshold: Int
        /// Smallest moving region as a fraction of the frame's area (0…1).
        public var minimumArea: Double
        /// Seconds of frame time between analyses while nothing moves (0: analyse every frame;
        /// `.infinity`: only frames with motion, and the first).
        public var idleAnalysisInterval: Double
        /// Seconds of frame time without motion before a motion ends (its `motionEnded`); the
        /// frames until then are analysed at the full rate.
        public var endDelay: Double
        /// Rectangles in device space (like `rectOfInterest`) where motion is ignored: it
        /// neither wakes the detectors nor is reported. At most `MotionDetector.Configuration.maximumMasks`.
        public var masks: [CGRect]
        /// Seconds for a lasting change to become background (the running average's time
        /// constant).
        public var adaptationTime: Double
        /// About how wide the small image the motion stage works on is, in pixels (32…1024).
        public var analysisWidth: Int

        /// Settings with the defaults: threshold 25, minimum area 0.1 % of the frame, idle
        /// analysis every 2 s, motion ends 1 s after the last movement, no masks, adaptation 3 s,
        /// 320 px wide.
        public init(
            isEnabled: Bool = true, threshold: Int = 25, minimumArea: Double = 0.001, idleAnalysisInterval: Double = 2,
            endDelay: Double = 1, masks: [CGRect] = [], adaptationTime: Double = 3, analysisWidth: Int = 320
        ) {
            self.isEnabled = isEnabled
            self.threshold = threshold
            self.minimumArea = minimumArea
            self.idleAnalysisInterval = idleAnalysisInterval
            self.endDelay = endDelay
            self.masks = masks
            self.adaptationTime = adaptationTime
            self.analysisWidth = analysisWidth
        }

        /// Motion detection off (the default): every frame is analysed, as AVFoundation does.
        public static let disabled = MotionDetection(isEnabled: false)

        /// The pixel stage's share of the settings.
        public var detectorConfiguration: MotionDetector.Configuration {
            MotionDetector.Configuration(
                threshold: threshold, minimumArea: minimumArea, adaptationTime: adaptationTime, masks: masks,
                analysisWidth: analysisWidth)
        }

        /// The settings brought into range: threshold 1…255, areas 0…1, times ≥ 0 (not a
        /// number: the default), adaptation ≥ 0.01 s, width 32…1024, masks clipped to the frame
        /// (empty ones dropped, at most `MotionDetector.Configuration.maximumMasks`).
        public var clamped: MotionDetection {
            var c = self
            let defaults = MotionDetection()
            c.threshold = min(255, max(1, threshold))
            c.minimumArea = minimumArea.isNaN ? defaults.minimumArea : min(1, max(0, minimumArea))
            c.idleAnalysisInterval = idleAnalysisInterval.isNaN ? defaults.idleAnalysisInterval : max(0, idleAnalysisInterval)
            c.endDelay = endDelay.isFinite ? max(0, endDelay) : defaults.endDelay
            c.adaptationTime = adaptationTime.isFinite ? max(0.01, adaptationTime) : defaults.adaptationTime
            c.analysisWidth = min(1024, max(32, analysisWidth))
            let unit = CGRect(x: 0, y: 0, width: 1, height: 1)
            c.masks = Array(
                masks.lazy.filter { $0.minX.isFinite && $0.minY.isFinite && $0.width.isFinite && $0.height.isFinite }
                    .map { $0.standardized.intersection(unit) }.filter { !$0.isNull && $0.width > 0 && $0.height > 0 }
                    .prefix(MotionDetector.Configuration.maximumMasks))
            return c
        }
    }

}

/// The motion stage's state: the pixel detector and the gate, with the settings they were made
/// from. Used on the metadata output's motion thread only, one frame at a time.
struct MotionStage: Sendable {
    let detector = MotionDetector()
    var gate = MotionGate(endDelay: 1, idleAnalysisInterval: 2)
    private var settings: CaptureMetadataOutput.MotionDetection?

    /// Brings the detector and the gate to `settings` (cheap when nothing changed).
    mutating func apply(_ settings: CaptureMetadataOutput.MotionDetection) {
        guard settings != self.settings else { return }
        self.settings = settings
        detector.configuration = settings.detectorConfiguration
        gate.endDelay = settings.endDelay
        gate.idleAnalysisInterval = settings.idleAnalysisInterval
    }

    /// A new stream: the background and the gate start again.
    mutating func reset() {
        detector.reset()
        _ = gate.finish()
    }
}
