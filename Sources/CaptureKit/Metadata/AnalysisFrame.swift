import Synchronization

/// One frame as the metadata stages see it: the sample, and BGR and gray views of it made on
/// first request and shared, so each conversion happens at most once per frame however many
/// stages and searches ask (`cv::cvtColor` into buffers from the metadata output's pools).
///
/// The standalone detectors (`FaceDetector.detect(in:)`, `CodeDetector.detect(in:)`) still take
/// a `PixelBuffer`; a stage hands them the view it needs.
///
/// Threading: thread-safe; each view is made under its own lock, so a face stage asking for BGR
/// and a code stage asking for gray convert in parallel.
public final class AnalysisFrame: Sendable {
    /// The frame as captured.
    public let sample: SampleBuffer
    private let converter: FrameConverter
    private let bgrView = Mutex<PixelBuffer?>(nil)
    private let grayView = Mutex<PixelBuffer?>(nil)
    private let madeConversions = Atomic<Int>(0)
    private let motionView = Mutex<(motion: MetadataMotionObject?, stillThrough: MediaTime?)>((nil, nil))
    /// Whether the frame is a still of its own (a photo from a folder or an image file), not a
    /// frame of video: nothing seen in it can be confirmed by the next frame.
    public let isIndependentStill: Bool

    /// Wraps `sample`; views come from `converter`'s pools.
    init(_ sample: SampleBuffer, converter: FrameConverter, isIndependentStill: Bool = false) {
        self.sample = sample
        self.converter = converter
        self.isIndependentStill = isIndependentStill
    }

    /// Wraps one sample with pools of its own (a single frame, tests, tools); `isIndependentStill`
    /// for a photo rather than a frame of video.
    public convenience init(_ sample: SampleBuffer, isIndependentStill: Bool = false) {
        self.init(sample, converter: FrameConverter(), isIndependentStill: isIndependentStill)
    }

    /// The captured pixels, in the source's format.
    public var pixelBuffer: PixelBuffer { sample.pixelBuffer }
    /// The frame's presentation time.
    public var time: MediaTime { sample.presentationTimeStamp }
    /// The input the frame came from.
    public var inputID: CaptureInput.ID { sample.inputID }

    /// The frame as 8-bit BGR: the captured buffer itself when it is BGR, else one conversion.
    public func bgr() throws(CaptureError) -> PixelBuffer { try view(.bgr, bgrView) }

    /// The frame as 8-bit gray: the captured buffer itself when it is gray, else one conversion
    /// (straight from YUYV or NV12 luma, not through BGR).
    public func gray() throws(CaptureError) -> PixelBuffer { try view(.gray, grayView) }

    /// What the output's motion stage saw in this frame (`CaptureMetadataOutput.motionDetection`):
    /// nil when nothing moved or motion detection is off. Set before any stage sees the frame.
    public var motion: MetadataMotionObject? { motionView.withLock { $0.motion } }

    /// When motion gating withheld the frames before this one because nothing moved in them: the
    /// time of the last of them (nil otherwise). What a stage saw in the last frame it analysed
    /// was still there, unmoved, until then; the default stages tell their trackers
    /// (`FaceTracker.sceneWasStill(through:)`, `CodeTracker.sceneWasStill(through:)`), so a face
    /// or a code that stays still is not taken for gone between two idle analyses.
    public var stillThrough: MediaTime? { motionView.withLock { $0.stillThrough } }

    /// Records the motion stage's findings (the output's motion thread, before the detectors).
    func setMotion(_ motion: MetadataMotionObject?, stillThrough: MediaTime?) {
        motionView.withLock { $0 = (motion, stillThrough) }
    }

    /// How many conversions this frame needed so far (at most one per view).
    public var conversionCount: Int { madeConversions.load(ordering: .relaxed) }

    private func view(_ format: PixelFormat, _ slot: borrowing Mutex<PixelBuffer?>) throws(CaptureError) -> PixelBuffer {
        if sample.pixelBuffer.pixelFormat == format { return sample.pixelBuffer }
        return try slot.withLock { (view: inout PixelBuffer?) throws(CaptureError) -> PixelBuffer in
            if let view { return view }
            let made = try converter.convert(sample, to: format, rotation: 0, mirrored: false).pixelBuffer
            madeConversions.add(1, ordering: .relaxed)
            view = made
            return made
        }
    }
}
