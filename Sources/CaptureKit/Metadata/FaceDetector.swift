import CVBridge
import Foundation
import Logging
import Synchronization

/// One face found in one image by `FaceDetector`, in device space (normalised 0…1, origin
/// top-left, the image as given).
///
/// Value type; thread-safe.
public struct FaceDetection: Sendable, Hashable {
    /// Bounding box in device space (YuNet's box: forehead to chin; Haar's square box).
    public var bounds: CGRect
    /// Five landmarks in device space, YuNet's order: right eye, left eye (the person's), nose
    /// tip, right mouth corner, left mouth corner. Empty for Haar.
    public var landmarks: [CGPoint]
    /// The detector's confidence, 0…1 (YuNet's score; for Haar, neighbour votes / 10, capped at 1).
    public var confidence: Double
    /// Roll in degrees, positive clockwise in the image, from the eye line's angle; nil without
    /// landmarks. See `FaceDetector` for the method.
    public var rollAngle: Double?
    /// Yaw in degrees, positive when the face turns towards the image's right, from the nose
    /// tip's offset; nil without landmarks. See `FaceDetector` for the method and its range.
    public var yawAngle: Double?

    /// Creates a detection.
    public init(bounds: CGRect, landmarks: [CGPoint], confidence: Double, rollAngle: Double?, yawAngle: Double?) {
        self.bounds = bounds
        self.landmarks = landmarks
        self.confidence = confidence
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
    }
}

/// Finds faces in one image, without a session (like ZBar's image scanner): YuNet-n 2023
/// (Models/face_detection_yunet_n_2023.onnx, run through `cv::dnn` by the shim) with the Haar
/// cascade (`cv::CascadeClassifier`, Models/haarcascade_frontalface_alt2.xml) as the fallback
/// when YuNet cannot be loaded. Any YuNet file can be given to `init(configuration:yuNetModel:haarCascade:)`,
/// including YuNet 2022mar (through `cv::FaceDetectorYN`).
///
/// What cvcam adds to plain YuNet; each part is kept only because it pays on the real-photo dev
/// set (`Tools/bench-faces`, figures in `Tools/Bench/README.md`):
/// - **Detection resolution.** The image (or the region of interest) is scaled so its long side
///   lies in `minimumDetectionDimension…maximumDetectionDimension`: `standard` searches photos
///   up to 2048 px at their own size; `realTime` reduces every video frame to a 640 px long
///   side, trading small faces for frame rate. `standard` also searches a larger image
///   reduced to 640 px for faces of 60 px and more scoring at least 0.8 (`largeFaceDimension`):
///   YuNet finds large faces better there. Nothing is enlarged by default: with YuNet-n an
///   enlarged small photo raised a cat's score over the threshold and lowered a masked face's.
///   With `tileSize` set, frames reduced that way are also scanned at full resolution in
///   overlapping tiles.
/// - **Smallest face** `minimumFaceSize`: candidates shorter than 15 px of the image are
///   dropped. Below that YuNet's boxes are mostly texture, not faces.
/// - **Score threshold** `scoreThreshold`, 0.7. The 2023 models' scores top out near 0.93, so
///   OpenCV's 0.9 for 2022mar would drop most faces.
/// - **Content gate.** A frame whose luma standard deviation is below `minimumFrameContrast`
///   (black, a lens cap) is not searched at all: it costs nothing, and YuNet 2022mar reports
///   phantom faces on such frames.
/// - **Optional checks** (off by default: on the dev set they cost recall with YuNet-n and
///   removed no false face): a box contrast floor `minimumContrast`, and the landmark geometry
///   check `checksLandmarkGeometry` (landmarks inside the box, nose below the eyes, mouth below
///   the nose, eyes at most `maximumEyeDistanceRatio` of the width apart), with a second look
///   turned upright for faces scoring at least `uprightRecheckScore`.
///
/// Angles come from the landmarks in pixels (before normalising, so non-square frames do not
/// distort them):
/// - roll = the angle of the line from the right eye (image left) to the left eye, `atan2(dy, dx)`
///   in degrees: positive clockwise in the image. Landmarks overshoot on tilted faces; with
///   `maximumRollRefinements` > 0 (`accurateAngles`) tilted faces are looked at again turned
///   upright and the residual roll is added.
/// - yaw: in the frame rotated by −roll, the nose tip's horizontal offset from the midpoint of
///   the eye centre and the mouth centre, divided by the eye distance `d`, is r ≈ k·tan(yaw)
///   for a nose that stands k·d in front of the face plane (k ≈ 0.5; the eye distance shrinks
///   with cos(yaw)). So yaw = atan(r / 0.5): a rough estimate within ±45°, compressed beyond.
///
/// Threading: thread-safe; calls are serialised (one OpenCV detector per instance). Use one
/// instance per thread for parallel detection.
public final class FaceDetector: @unchecked Sendable {
    // @unchecked: the native handles are used only while `lock` is held; everything else is immutable.

    /// Which detector runs.
    public enum Backend: String, Sendable, Hashable, CustomStringConvertible {
        /// OpenCV's YuNet CNN (scores, five landmarks).
        case yuNet
        /// OpenCV's Haar cascade (frontal faces, no landmarks).
        case haar
        public var description: String { rawValue }
    }

    /// Tunable policy. Value type; thread-safe.
    public struct Configuration: Sendable, Hashable {
        /// Faces scoring below this are dropped (YuNet scores 0…1).
        public var scoreThreshold: Double
        /// Faces shorter than this many pixels of the image are dropped; 0 keeps all. (A reduced
        /// image has YuNet's own floor too: about 10 px at the detection scale.)
        public var minimumFaceSize: Double
        /// Check the landmark geometry of each face (see `FaceDetector`).
        public var checksLandmarkGeometry: Bool
        /// Faces failing the landmark check with at least this score get a second look turned
        /// upright (YuNet's landmarks break down on strongly tilted faces); nil: no second look.
        public var uprightRecheckScore: Double?
        /// Images whose long side is shorter are enlarged to this long side before detection
        /// (nil: never enlarge).
        public var minimumDetectionDimension: Int?
        /// Images whose long side is longer are reduced to this long side (nil: never reduce).
        public var maximumDetectionDimension: Int?
        /// When set and the image was reduced, it is also scanned at full resolution in square
        /// tiles of this side, overlapping by `tileOverlap` (a fraction of the side).
        public var tileSize: Int?
        /// Overlap between neighbouring tiles, 0…0.5.
        public var tileOverlap: Double
        /// When set and a whole search runs at a long side over 1.25 × this, the region is also
        /// searched reduced to this long side, keeping the faces found there that are at least
        /// `largeFaceMinimumSize` pixels tall: YuNet finds large faces better in a smaller image.
        public var largeFaceDimension: Int?
        /// Smallest face, in image pixels, taken from the reduced search (`largeFaceDimension`).
        public var largeFaceMinimumSize: Double
        /// Least score of a face taken from the reduced search: a face the full-size search did
        /// not report must be clearer there (an enlarged cat's face scored 0.72 at 640 px).
        public var largeFaceScoreThreshold: Double
        /// Boxes overlapping a better one by more than this IoU are merged away (YuNet's NMS and
        /// the merge across tiles).
        public var nmsThreshold: Double
        /// Frames whose luma standard deviation is below this are not searched (0: off).
        public var minimumFrameContrast: Double
        /// A face box shrunk to 16×16 must have at least this luma standard deviation (0: off).
        public var minimumContrast: Double
        /// Largest eye distance as a fraction of the box width.
        public var maximumEyeDistanceRatio: Double
        /// Faces whose landmark roll reaches this many degrees are re-measured upright, within
        /// the `maximumRollRefinements` budget (see `FaceDetector`).
        public var rollRefinementThreshold: Double
        /// At most this many faces per image (the largest) get their roll refined by one upright
        /// look; the rest report the landmark roll as is. 0 by default: a look costs a 160×160
        /// YuNet run (~3–7 ms here), a third of a 640×480 frame, and the per-frame cost target
        /// is 1.2× plain YuNet. `accurateAngles` sets 2.
        public var maximumRollRefinements: Int
        /// Haar only: `detectMultiScale`'s scale step between pyramid levels.
        public var haarScaleFactor: Double
        /// Haar only: `detectMultiScale`'s neighbour votes a face needs.
        public var haarMinimumNeighbours: Int

        /// Creates a configuration; the defaults are `standard`.
        public init(
            scoreThreshold: Double = 0.7, minimumFaceSize: Double = 15, checksLandmarkGeometry: Bool = false,
            uprightRecheckScore: Double? = nil, minimumDetectionDimension: Int? = nil,
            maximumDetectionDimension: Int? = 2048, tileSize: Int? = nil, tileOverlap: Double = 0.25,
            largeFaceDimension: Int? = 640, largeFaceMinimumSize: Double = 60, largeFaceScoreThreshold: Double = 0.8,
            nmsThreshold: Double = 0.3, minimumFrameContrast: Double = 2, minimumContrast: Double = 0,
            maximumEyeDistanceRatio: Double = 0.65, rollRefinementThreshold: Double = 8, maximumRollRefinements: Int = 0,
            haarScaleFactor: Double = 1.1, haarMinimumNeighbours: Int = 4
        ) {
            self.scoreThreshold = scoreThreshold
            self.minimumFaceSize = minimumFaceSize
            self.checksLandmarkGeometry = checksLandmarkGeometry
            self.uprightRecheckScore = uprightRecheckScore
            self.minimumDetectionDimension = minimumDetectionDimension
            self.maximumDetectionDimension = maximumDetectionDimension
            self.tileSize = tileSize
            self.tileOverlap = tileOverlap
            self.largeFaceDimension = largeFaceDimension
            self.largeFaceMinimumSize = largeFaceMinimumSize
            self.largeFaceScoreThreshold = largeFaceScoreThreshold
            self.nmsThreshold = nmsThreshold
            self.minimumFrameContrast = minimumFrameContrast
            self.minimumContrast = minimumContrast
            self.maximumEyeDistanceRatio = maximumEyeDistanceRatio
            self.rollRefinementThreshold = rollRefinementThreshold
            self.maximumRollRefinements = maximumRollRefinements
            self.haarScaleFactor = haarScaleFactor
            self.haarMinimumNeighbours = haarMinimumNeighbours
        }

        /// The default for single images and photos (`FaceDetector()`): photos up to 2048 px
        /// searched at their own size (faces from about 14 px wide), larger ones reduced to 2048 px.
        public static let standard = Configuration()
        /// For live video: frames are reduced to a 640 px long side, so faces keep up with a
        /// 720p30 camera on a two-core board, at the price of the smallest face found (about
        /// 10 px × the frame's long side / 640, YuNet's own floor). `CaptureMetadataOutput`'s default.
        public static let realTime = Configuration(maximumDetectionDimension: 640, largeFaceDimension: nil)
        /// `standard` at most 1280 px, plus full-resolution 640 px tiles for larger frames
        /// (distant faces in 1080p video), at roughly 3–4× the cost of a 1280 px search.
        public static let tiled = Configuration(maximumDetectionDimension: 1280, tileSize: 640, largeFaceDimension: nil)
        /// `standard` plus roll refined for up to two tilted faces per image (error ≤ 5° up to
        /// ±30° instead of up to 25° too much), at one 160×160 YuNet run per refined face.
        public static let accurateAngles = Configuration(maximumRollRefinements: 2)
        /// YuNet as OpenCV runs it: the image at its own size, no checks, no size floor, one
        /// threshold (0.9 is OpenCV's sample default for 2022mar). For comparisons.
        public static func plain(scoreThreshold: Double = 0.9) -> Configuration {
            Configuration(
                scoreThreshold: scoreThreshold, minimumFaceSize: 0, checksLandmarkGeometry: false, uprightRecheckScore: nil,
                minimumDetectionDimension: nil, maximumDetectionDimension: nil, largeFaceDimension: nil, minimumFrameContrast: 0,
                minimumContrast: 0, rollRefinementThreshold: .infinity)
        }
    }

    /// File names looked up in the Models folder: YuNet-n 2023, the default model.
    public static let yuNetModelName = "face_detection_yunet_n_2023.onnx"
    /// YuNet 2022mar, what OpenCV 4.6's own `FaceDetectorYN` runs (shipped for comparisons).
    public static let yuNet2022ModelName = "face_detection_yunet_2022mar.onnx"
    /// File name of the Haar fallback.
    public static let haarCascadeName = "haarcascade_frontalface_alt2.xml"

    /// The detector that runs (YuNet unless it could not be loaded or Haar was asked for).
    public let backend: Backend
    /// The policy in force.
    public let configuration: Configuration

    private let lock = NSLock()
    private let yuNet: OpaquePointer?
    /// A second YuNet fixed at 160×160 for upright looks, so the main one keeps its input size
    /// (changing it rebuilds YuNet's priors, which costs more than the small look itself).
    private let uprightYuNet: OpaquePointer?
    /// A third YuNet fixed at `nearSearchInput` square for searches near known faces.
    private let nearYuNet: OpaquePointer?
    private let cascade: OpaquePointer?
    /// The YuNet model file, for the networks `sizedYuNet(width:height:)` creates.
    private let yuNetModelPath: String?
    /// One YuNet network per input size the searches use (whole frame, coarse pass, the two
    /// halves: four for a video), created on first use and never reshaped. Reshaping one network
    /// on every frame made OpenCV rebuild its layers each time (heaptrack: 9,520 layer
    /// allocations from `Net::forward` in 150 s of soak) and the heap swing by ±5 MB; upstream
    /// reports memory accumulating that way (opencv/opencv#24836). Costs ~10 MB resident once.
    /// Used only while `lock` is held.
    private var sizedYuNets: [Int: OpaquePointer] = [:]
    /// Sizes beyond this many (a folder of photos of many sizes) share `yuNet`, reshaped per image.
    private static let sizedYuNetLimit = 6
    /// BGR buffers for the scaled copies the searches make, by size, reused from frame to frame
    /// (a video needs four or five sizes) instead of a new allocation per search. Used only
    /// while `lock` is held; nothing returned to callers refers to them.
    private var scratch: [Int: PixelBuffer] = [:]

    private static let logger = Logger(label: "cvcam.faces")
    private static let fallbackAnnounced = Atomic<Bool>(false)

    /// Loads the models found by `FaceModelSearch` (`modelsDirectory`, else `CVCAM_MODELS`, else
    /// the installed and system locations). YuNet is used unless it cannot be loaded (or
    /// `backend` is `.haar`); then the Haar cascade is used and a warning is logged once per
    /// process on `cvcam.faces`. Throws `faceModelUnavailable` when neither loads.
    public convenience init(
        configuration: Configuration = .standard, modelsDirectory: URL? = nil, backend: Backend = .yuNet
    ) throws(CaptureError) {
        let search = FaceModelSearch(explicit: modelsDirectory)
        // A place that holds neither file still names where the models were expected.
        let expected = search.candidates.first?.folder
        try self.init(
            configuration: configuration,
            yuNetModel: backend == .yuNet
                ? (search.locate(Self.yuNetModelName)?.file ?? expected?.appendingPathComponent(Self.yuNetModelName)) : nil,
            haarCascade: search.locate(Self.haarCascadeName)?.file
                ?? expected?.appendingPathComponent(Self.haarCascadeName))
    }

    /// Loads the given model files: YuNet when `yuNetModel` loads, else the Haar cascade
    /// (`cvb_yunet_create`, `cvb_cascade_create`). Throws `faceModelUnavailable` when neither loads.
    public init(configuration: Configuration = .standard, yuNetModel: URL?, haarCascade: URL?) throws(CaptureError) {
        self.configuration = configuration
        var err = cvb_error()
        var yuNetProblem = "no YuNet model given"
        if let yuNetModel {
            if FileManager.default.fileExists(atPath: yuNetModel.path),
                let handle = cvb_yunet_create(
                    yuNetModel.path, 320, 320, Float(configuration.scoreThreshold), Float(configuration.nmsThreshold),
                    5000, &err)
            {
                yuNet = handle
                yuNetModelPath = yuNetModel.path
                // Scored at 0.5: the face is already known to be there.
                uprightYuNet = cvb_yunet_create(yuNetModel.path, 160, 160, 0.5, 0.3, 16, &err)
                nearYuNet = cvb_yunet_create(
                    yuNetModel.path, Int32(Self.nearSearchInput), Int32(Self.nearSearchInput),
                    Float(configuration.scoreThreshold), Float(configuration.nmsThreshold), 64, &err)
                cascade = nil
                backend = .yuNet
                return
            }
            yuNetProblem =
                FileManager.default.fileExists(atPath: yuNetModel.path)
                ? "OpenCV could not load \(yuNetModel.path): \(err.text)" : "no YuNet model at \(yuNetModel.path)"
        }
        yuNet = nil
        yuNetModelPath = nil
        uprightYuNet = nil
        nearYuNet = nil
        var haarProblem = "no Haar cascade given"
        if let haarCascade {
            if FileManager.default.fileExists(atPath: haarCascade.path),
                let handle = cvb_cascade_create(haarCascade.path, &err)
            {
                cascade = handle
                backend = .haar
                if yuNetModel != nil, !Self.fallbackAnnounced.exchange(true, ordering: .relaxed) {
                    Self.logger.warning(
                        "YuNet unavailable (\(yuNetProblem)); using the Haar cascade \(haarCascade.path): no landmarks, roll or yaw, lower recall. Install it in /usr/share/cvcam/models, or point --models or CVCAM_MODELS at the folder holding \(Self.yuNetModelName) (`cvcam doctor` shows where cvcam looks)."
                    )
                }
                return
            }
            haarProblem =
                FileManager.default.fileExists(atPath: haarCascade.path)
                ? "OpenCV could not load \(haarCascade.path): \(err.text)" : "no Haar cascade at \(haarCascade.path)"
        }
        throw CaptureError(
            .faceModelUnavailable,
            "no face model could be loaded (\(yuNetProblem); \(haarProblem)); point --models or CVCAM_MODELS at the folder holding \(Self.yuNetModelName); `cvcam doctor` shows where cvcam looks",
            path: yuNetModel?.path ?? haarCascade?.path)
    }

    deinit {
        if let yuNet { cvb_yunet_release(yuNet) }
        for handle in sizedYuNets.values { cvb_yunet_release(handle) }
        if let uprightYuNet { cvb_yunet_release(uprightYuNet) }
        if let nearYuNet { cvb_yunet_release(nearYuNet) }
        if let cascade { cvb_cascade_release(cascade) }
    }

    /// The first folder on `FaceModelSearch`'s list holding either model file.
    public static func locateModels(explicit: URL? = nil) -> URL? {
        let search = FaceModelSearch(explicit: explicit)
        return (search.locate(yuNetModelName) ?? search.locate(haarCascadeName))?.file.deletingLastPathComponent()
    }

    /// Finds faces in `image` (BGR, gray, BGRA, YUYV or NV12), looking only inside
    /// `regionOfInterest` (device space) and reporting only faces whose centre lies in it.
    /// Results are in device space of the whole image, best first.
    public func detect(in image: PixelBuffer, regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1))
        throws(CaptureError) -> [FaceDetection]
    {
        try confirmedFaces(in: image, regionOfInterest: regionOfInterest) { source, roi throws(CaptureError) in
            try scan(source, roi)
        } ?? []
    }

    /// A part of a whole-frame search, so that one search can be spread over consecutive video
    /// frames and no frame pays for all of it (`DefaultFaceStage` does this). Together the
    /// three parts find what a whole search finds: the halves report only faces up to
    /// `scanPartOverlap` − 2 × `scanPartGap` (48) detection pixels tall, and every face that
    /// small lies, with the gap to spare, inside one half; taller faces are at least twice the
    /// smallest face the coarse pass finds, and are its to find. A face in a half must stay
    /// `scanPartGap` away from the half's inner edge, because YuNet reports a face cut by an
    /// image edge with a box that ends short of the edge. At 1280x720 with `.realTime` the
    /// coarse pass costs about a quarter of a whole search, each half about 0.7.
    public enum ScanPart: Sendable, Hashable, CaseIterable {
        /// The whole region at half the detection scale: the larger faces, wherever they are.
        case coarse
        /// The upper half at the detection scale, overlapping the lower half.
        case upperHalf
        /// The lower half at the detection scale, overlapping the upper half.
        case lowerHalf
    }

    /// How far the two halves of a spread search overlap, in pixels at the detection scale
    /// (128 frame pixels at 1280x720 with `.realTime`).
    public static let scanPartOverlap = 64.0
    /// How far a face found in a half must stay from its inner edge, in detection pixels.
    public static let scanPartGap = 8.0

    /// Searches one part of `regionOfInterest` (see `ScanPart`), with the same gate and checks
    /// as `detect(in:regionOfInterest:)`. Tiles (`tileSize`) are not searched.
    public func detect(in image: PixelBuffer, regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1), part: ScanPart)
        throws(CaptureError) -> [FaceDetection]
    {
        try confirmedFaces(in: image, regionOfInterest: regionOfInterest) { source, roi throws(CaptureError) in
            let scale = scanScale(roi)
            if part == .coarse { return try detectScaled(source, region: roi, scale: scale / 2) }
            let gap = Self.scanPartGap / scale
            let tallest = (Self.scanPartOverlap / scale).rounded(.up) - 2 * gap
            let upper = part == .upperHalf
            let band = Self.half(upper: upper, of: roi, scale: scale)
            return try detectScaled(source, region: band, scale: scale).filter { c in
                Double(c.box.height) <= tallest
                    && (upper ? Double(c.box.maxY) <= Double(band.maxY) - gap : Double(c.box.minY) >= Double(band.minY) + gap)
            }
        } ?? []
    }

    /// The upper or lower half of `roi` for a spread search at `scale`, in whole pixels.
    static func half(upper: Bool, of roi: CGRect, scale: Double) -> CGRect {
        let overlap = (scanPartOverlap / scale).rounded(.up)
        // Inside the region even when the overlap is taller than it (frames a few dozen pixels high).
        let split = min(max((Double(roi.midY) - overlap / 2).rounded(.down), Double(roi.minY)), Double(roi.maxY))
        return upper
            ? CGRect(x: roi.minX, y: roi.minY, width: roi.width, height: min(roi.height, CGFloat(split + overlap) - roi.minY))
            : CGRect(x: roi.minX, y: CGFloat(split), width: roi.width, height: roi.maxY - CGFloat(split))
    }

    /// Runs every search once on a blank frame of `width` × `height` (whole, the three parts,
    /// a search near a face, an upright look), so that OpenCV allocates each network's buffers
    /// now rather than during the first frames: without it the first frame of a 720p camera
    /// waits ~25 ms more for its faces. What is found is discarded.
    public func prepare(width: Int, height: Int, regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1))
        throws(CaptureError)
    {
        let roi = DeviceSpace(width: width, height: height).wholePixels(regionOfInterest)?.cgRect ?? .zero
        guard roi.width >= 8, roi.height >= 8 else { return }
        let blank = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
        lock.lock()
        defer { lock.unlock() }
        let scale = scanScale(roi)
        _ = try scan(blank, roi)
        _ = try detectScaled(blank, region: roi, scale: scale / 2)
        _ = try detectScaled(blank, region: Self.half(upper: true, of: roi, scale: scale), scale: scale)
        _ = try detectScaled(blank, region: Self.half(upper: false, of: roi, scale: scale), scale: scale)
        let side = CGFloat(min(Double(min(roi.width, roi.height)), Self.nearSearchMinimumSide * 2))
        _ = try detectScaled(
            blank, region: CGRect(x: roi.minX, y: roi.minY, width: side, height: side),
            scale: Double(Self.nearSearchInput) / Double(side), yuNetHandle: nearYuNet ?? yuNet)
        if let uprightYuNet {
            let warmUp = try scratchBuffer(width: 160, height: 160)
            var rows = [Float](repeating: 0, count: 16 * Int(CVB_YUNET_ROW))
            var count: Int32 = 0
            var err = cvb_error()
            _ = warmUp.withBridgeImage { img in
                rows.withUnsafeMutableBufferPointer { cvb_yunet_detect(uprightYuNet, &img, $0.baseAddress, 16, &count, &err) }
            }
        }
    }

    /// Looks for faces only near `faces` (device-space boxes, typically where tracked faces are
    /// expected in this frame), the way a tracker follows faces between whole-frame scans.
    ///
    /// Each box gets a square of `nearSearchContext` × its longer side (at least
    /// `nearSearchMinimumSide` pixels) around its centre, moved inside the region of interest,
    /// scaled to `nearSearchInput` × `nearSearchInput` (`cvb_image_crop_resize`) and searched
    /// by a YuNet fixed at that size (or Haar); small faces are enlarged on the way, and no
    /// face is looked at smaller than the whole-frame scan would look at it. In each square only
    /// the candidate closest to the face searched for is kept (IoU ≥ 0.3, or centres less than
    /// half its side apart), and only when the square's edges do not cut it: faces that are
    /// new, or neighbours cut by the square, are the whole-frame scan's to find. What remains
    /// passes the same gate and checks as `detect(in:regionOfInterest:)`. A 128×128 search
    /// costs about a tenth of a 640x360 scan.
    ///
    /// Returns nil, having searched nothing, when a box is too large for its square to fit in
    /// the region of interest: scan the whole frame instead (a face that large costs no more
    /// there).
    public func detect(
        in image: PixelBuffer, near faces: [CGRect], regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    ) throws(CaptureError) -> [FaceDetection]? {
        let space = DeviceSpace(image)
        let roi = space.wholePixels(regionOfInterest)?.cgRect ?? .zero
        let known = faces.map(space.pixelRect(fromDevice:))
        var squares: [CGRect] = []
        for face in known {
            guard let square = Self.nearSearchSquare(around: face, regionOfInterest: roi) else { return nil }
            squares.append(square)
        }
        guard !squares.isEmpty else { return [] }
        // The candidate that is the face searched for: IoU ≥ 0.3, or centres under half its side apart.
        func closeness(_ box: CGRect, to face: CGRect) -> Double {
            face.matchAffinity(box, minimumIoU: 0.3, maximumCentreDistance: 0.5)
        }
        return try confirmedFaces(in: image, regionOfInterest: regionOfInterest) { source, roi throws(CaptureError) in
            var found: [Candidate] = []
            for (face, square) in zip(known, squares) {
                let scale = max(Double(Self.nearSearchInput) / Double(square.width), scanScale(roi))
                let candidates = try detectScaled(source, region: square, scale: scale, yuNetHandle: nearYuNet ?? yuNet)
                if let best = candidates.filter({ Self.isWhole($0.box, in: square, regionOfInterest: roi) })
                    .max(by: { closeness($0.box, to: face) < closeness($1.box, to: face) }),
                    closeness(best.box, to: face) > 0
                {
                    found.append(best)
                }
            }
            return found
        }
    }

    /// Side of the square searched around a known face, in face sides.
    public static let nearSearchContext = 2.5
    /// The least side of that square, in frame pixels (small faces get a little more context).
    public static let nearSearchMinimumSide = 48.0
    /// The square's side in pixels when it is searched.
    public static let nearSearchInput = 128

    /// The square searched around `face` (pixels), in whole pixels inside `roi`, or nil when it
    /// does not fit.
    static func nearSearchSquare(around face: CGRect, regionOfInterest roi: CGRect) -> CGRect? {
        let side = max(nearSearchMinimumSide, nearSearchContext * Double(max(face.width, face.height))).rounded(.up)
        guard side <= Double(min(roi.width, roi.height)) else { return nil }
        let x = min(max((Double(face.midX) - side / 2).rounded(), Double(roi.minX)), Double(roi.maxX) - side)
        let y = min(max((Double(face.midY) - side / 2).rounded(), Double(roi.minY)), Double(roi.maxY) - side)
        return CGRect(x: x, y: y, width: side, height: side)
    }

    /// Whether `box` lies inside `square` (a search square or a half), allowing 2 % of its
    /// shorter side, except where its edge is the region's edge (a face cut by the frame is
    /// still a face).
    static func isWhole(_ box: CGRect, in square: CGRect, regionOfInterest roi: CGRect) -> Bool {
        let slack = 0.02 * min(square.width, square.height)
        return (box.minX >= square.minX - slack || square.minX <= roi.minX)
            && (box.minY >= square.minY - slack || square.minY <= roi.minY)
            && (box.maxX <= square.maxX + slack || square.maxX >= roi.maxX)
            && (box.maxY <= square.maxY + slack || square.maxY >= roi.maxY)
    }

    /// The work shared by both searches: BGR conversion, the frame gate, `search` for
    /// candidates (nil passes through), non-maximum suppression and the per-face checks.
    private func confirmedFaces(
        in image: PixelBuffer, regionOfInterest: CGRect,
        search: (PixelBuffer, CGRect) throws(CaptureError) -> [Candidate]?
    ) throws(CaptureError) -> [FaceDetection]? {
        let space = DeviceSpace(image)
        let roi = space.wholePixels(regionOfInterest)?.cgRect ?? .zero
        guard roi.width >= 8, roi.height >= 8 else { return [] }
        var source = image
        if image.pixelFormat != .bgr {
            source = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
            var err = cvb_error()
            guard PixelBuffer.withBridgeImages(image, source, { cvb_image_convert(&$0, &$1, &err) }) == 0 else {
                throw CaptureError(.conversionFailed, "face detection cannot read \(image.pixelFormat) frames: \(err.text)")
            }
        }
        lock.lock()
        defer { lock.unlock() }
        if configuration.minimumFrameContrast > 0 {
            // Sampled, not averaged: a 256×256 pick of pixels keeps noise's deviation and costs
            // next to nothing beside the detector.
            let stats = try regionStats(source, roi, sample: 256, nearest: true)
            if stats.stddev < configuration.minimumFrameContrast { return [] }
        }
        guard var candidates = try search(source, roi) else { return nil }
        candidates = Self.suppressOverlaps(candidates, threshold: configuration.nmsThreshold)
        var faces: [FaceDetection] = []
        var refinementsLeft = configuration.maximumRollRefinements
        // Largest faces first, so the roll refinement budget goes to them; reported best first.
        for c in candidates.sorted(by: { $0.box.width * $0.box.height > $1.box.width * $1.box.height }) {
            // Haar's votes are already thresholded by `haarMinimumNeighbours`.
            guard backend == .haar || c.score >= configuration.scoreThreshold,
                roi.contains(CGPoint(x: c.box.midX, y: c.box.midY))
            else {
                continue
            }
            if configuration.minimumContrast > 0 {
                let contrast = try regionStats(source, c.box.roundedOutwards, sample: 16, nearest: false).stddev
                if contrast < configuration.minimumContrast { continue }
            }
            var marks = c.landmarks ?? []
            var roll = c.landmarks.map(FaceGeometry.roll)
            var yaw = c.landmarks.map(FaceGeometry.yaw)
            if let m = c.landmarks, let r = roll {
                let plausible =
                    !configuration.checksLandmarkGeometry
                    || FaceGeometry.isPlausible(
                        box: c.box, landmarks: m, maximumEyeDistanceRatio: configuration.maximumEyeDistanceRatio)
                if !plausible {
                    guard let recheck = configuration.uprightRecheckScore, c.score >= recheck,
                        let upright = try uprightLook(source, c, roll: r, passes: 2), upright.plausible
                    else { continue }
                    (marks, roll, yaw) = (upright.landmarks, upright.roll, upright.yaw)
                } else if abs(r) >= configuration.rollRefinementThreshold, refinementsLeft > 0 {
                    refinementsLeft -= 1
                    if let upright = try uprightLook(source, c, roll: r, passes: 1) {
                        (marks, roll, yaw) = (upright.landmarks, upright.roll, upright.yaw)
                    }
                }
            }
            faces.append(
                FaceDetection(
                    bounds: space.deviceRect(fromPixels: c.box),
                    landmarks: marks.map(space.devicePoint(fromPixel:)),
                    confidence: min(1, max(0, c.score)),
                    rollAngle: roll, yawAngle: yaw))
        }
        return faces.sorted { $0.confidence > $1.confidence }
    }

    // MARK: - Scanning

    /// A face in pixels of the full image.
    struct Candidate {
        var box: CGRect
        var landmarks: [CGPoint]?
        var score: Double
    }

    /// The scale a whole-frame scan of `roi` runs at (see `minimumDetectionDimension`).
    private func scanScale(_ roi: CGRect) -> Double {
        let long = max(roi.width, roi.height)
        var scale = 1.0
        if let minimum = configuration.minimumDetectionDimension, long < CGFloat(minimum) {
            scale = Double(minimum) / long
        }
        if let maximum = configuration.maximumDetectionDimension, long > CGFloat(maximum) {
            scale = Double(maximum) / long
        }
        return scale
    }

    private func scan(_ image: PixelBuffer, _ roi: CGRect) throws(CaptureError) -> [Candidate] {
        let scale = scanScale(roi)
        var found = try detectScaled(image, region: roi, scale: scale)
        let long = Double(max(roi.width, roi.height))
        if let side = configuration.largeFaceDimension, long * scale > 1.25 * Double(side) {
            found += try detectScaled(image, region: roi, scale: Double(side) / long).filter {
                Double($0.box.height) >= configuration.largeFaceMinimumSize && $0.score >= configuration.largeFaceScoreThreshold
            }
        }
        if let tile = configuration.tileSize, scale < 1, tile >= 64 {
            let step = max(32, Int(Double(tile) * (1 - min(0.5, max(0, configuration.tileOverlap)))))
            for y in Self.tileStarts(length: Int(roi.height), tile: tile, step: step) {
                for x in Self.tileStarts(length: Int(roi.width), tile: tile, step: step) {
                    let region = CGRect(
                        x: roi.minX + CGFloat(x), y: roi.minY + CGFloat(y), width: CGFloat(min(tile, Int(roi.width) - x)),
                        height: CGFloat(min(tile, Int(roi.height) - y)))
                    found += try detectScaled(image, region: region, scale: 1)
                }
            }
        }
        return found
    }

    /// Tile origins covering `length` with tiles of `tile` every `step`, the last one flush with the end.
    static func tileStarts(length: Int, tile: Int, step: Int) -> [Int] {
        guard length > tile else { return [0] }
        var starts = Array(stride(from: 0, to: length - tile, by: step))
        starts.append(length - tile)
        return starts
    }

    /// The YuNet network for `width` × `height` input (see `sizedYuNets`): created at that size
    /// on first use (`cvb_yunet_create`); `yuNet`, reshaped, once the limit is reached or when
    /// creating one fails; nil when no YuNet model loaded (Haar).
    private func sizedYuNet(width: Int, height: Int) -> OpaquePointer? {
        let key = width << 32 | height
        if let handle = sizedYuNets[key] { return handle }
        guard let yuNetModelPath, sizedYuNets.count < Self.sizedYuNetLimit else { return yuNet }
        var err = cvb_error()
        guard
            let handle = cvb_yunet_create(
                yuNetModelPath, Int32(width), Int32(height), Float(configuration.scoreThreshold),
                Float(configuration.nmsThreshold), 5000, &err)
        else { return yuNet }
        sizedYuNets[key] = handle
        return handle
    }

    /// A scratch BGR buffer of `width` × `height` (see `scratch`); the cache is emptied when a
    /// ninth size is asked for (frame sizes changed).
    private func scratchBuffer(width: Int, height: Int) throws(CaptureError) -> PixelBuffer {
        let key = width << 32 | height
        if let b = scratch[key] { return b }
        if scratch.count >= 8 { scratch.removeAll() }
        let b = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
        scratch[key] = b
        return b
    }

    /// Crops `region` (pixels), scales it by `scale`, runs the backend, maps results back to image pixels.
    private func detectScaled(
        _ image: PixelBuffer, region: CGRect, scale: Double, yuNetHandle: OpaquePointer? = nil
    ) throws(CaptureError) -> [Candidate] {
        // The shim refuses a crop reaching outside the image: whatever a search plan asks, only
        // the part inside is searched.
        let region = region.intersection(CGRect(x: 0, y: 0, width: image.width, height: image.height))
        guard !region.isNull, region.width >= 1, region.height >= 1 else { return [] }
        let w = max(1, Int((Double(region.width) * scale).rounded()))
        let h = max(1, Int((Double(region.height) * scale).rounded()))
        let scaled: PixelBuffer
        var err = cvb_error()
        if scale == 1, region.width == CGFloat(image.width), region.height == CGFloat(image.height) {
            scaled = image
        } else {
            scaled = try scratchBuffer(width: w, height: h)
            let interpolation = PixelBuffer.resizeInterpolation(
                width: Int(region.width), height: Int(region.height), toWidth: w, toHeight: h)
            let status = PixelBuffer.withBridgeImages(image, scaled) { src, dst in
                cvb_image_crop_resize(
                    &src, Int32(region.minX), Int32(region.minY), Int32(region.width), Int32(region.height), &dst,
                    interpolation, &err)
            }
            guard status == 0 else {
                throw CaptureError(.detectionFailed, "cannot prepare the image for face detection: \(err.text)")
            }
        }
        let sx = Double(region.width) / Double(w)
        let sy = Double(region.height) / Double(h)
        func back(_ x: Double, _ y: Double) -> CGPoint {
            CGPoint(x: Double(region.minX) + x * sx, y: Double(region.minY) + y * sy)
        }
        var count: Int32 = 0
        if let yuNet = yuNetHandle ?? sizedYuNet(width: w, height: h) {
            let capacity = 1024
            var rows = [Float](repeating: 0, count: capacity * Int(CVB_YUNET_ROW))
            let status = scaled.withBridgeImage { img in
                rows.withUnsafeMutableBufferPointer {
                    cvb_yunet_detect(yuNet, &img, $0.baseAddress, Int32(capacity), &count, &err)
                }
            }
            guard status == 0 else { throw CaptureError(.detectionFailed, "YuNet failed: \(err.text)") }
            return (0..<min(Int(count), capacity)).compactMap { i in
                let r = Array(rows[(i * Int(CVB_YUNET_ROW))..<((i + 1) * Int(CVB_YUNET_ROW))]).map(Double.init)
                guard r[3] * sy >= configuration.minimumFaceSize else { return nil }
                let origin = back(r[0], r[1])
                let corner = back(r[0] + r[2], r[1] + r[3])
                let marks = (0..<5).map { back(r[4 + 2 * $0], r[5 + 2 * $0]) }
                return Candidate(
                    box: CGRect(x: origin.x, y: origin.y, width: corner.x - origin.x, height: corner.y - origin.y),
                    landmarks: marks, score: r[14])
            }
        }
        guard let cascade else { return [] }
        let capacity = 1024
        var rects = [Int32](repeating: 0, count: capacity * 4)
        var votes = [Int32](repeating: 0, count: capacity)
        let status = scaled.withBridgeImage { img in
            rects.withUnsafeMutableBufferPointer { r in
                votes.withUnsafeMutableBufferPointer { v in
                    cvb_cascade_detect(
                        cascade, &img, configuration.haarScaleFactor, Int32(configuration.haarMinimumNeighbours), 20, 20,
                        0, 0, r.baseAddress, v.baseAddress, Int32(capacity), &count, &err)
                }
            }
        }
        guard status == 0 else { throw CaptureError(.detectionFailed, "the Haar cascade failed: \(err.text)") }
        return (0..<min(Int(count), capacity)).map { i in
            let origin = back(Double(rects[i * 4]), Double(rects[i * 4 + 1]))
            let corner = back(Double(rects[i * 4] + rects[i * 4 + 2]), Double(rects[i * 4 + 1] + rects[i * 4 + 3]))
            return Candidate(
                box: CGRect(x: origin.x, y: origin.y, width: corner.x - origin.x, height: corner.y - origin.y),
                landmarks: nil, score: min(1, Double(votes[i]) / 10))
        }
    }

    /// What a face looks like turned upright.
    struct UprightLook {
        var roll: Double
        var yaw: Double
        /// Upright landmarks mapped back to image pixels.
        var landmarks: [CGPoint]
        /// Whether the upright landmarks pass the geometry check against the upright box.
        var plausible: Bool
    }

    /// YuNet's landmarks overshoot on tilted faces (a face rolled 20° reads as 25–45°; past
    /// ~25° they can be wrong altogether). So the face is looked at again upright: a square of
    /// twice its box, turned by the roll estimate and scaled to 160 px (`cvb_image_warp_rotated`),
    /// is searched again and the residual roll of the face nearest the centre is added (one
    /// pass for roll refinement, up to two for a second look). On grace_hopper.jpg rotated by
    /// ±20…30° one pass brings the roll error from up to 23° down to 5°. Cost: one 160×160 YuNet
    /// run per pass.
    /// Nil when nothing is found upright.
    private func uprightLook(_ image: PixelBuffer, _ c: Candidate, roll: Double, passes: Int) throws(CaptureError)
        -> UprightLook?
    {
        guard let uprightYuNet else { return nil }
        let side = 160
        let crop = try scratchBuffer(width: side, height: side)
        let scale = Double(side) / (2 * Double(max(c.box.width, c.box.height)))
        let centre = Double(side) / 2
        var estimate = roll
        var look: UprightLook?
        var err = cvb_error()
        for _ in 0..<passes {
            let warped = PixelBuffer.withBridgeImages(image, crop) { src, dst in
                cvb_image_warp_rotated(&src, Double(c.box.midX), Double(c.box.midY), estimate, scale, &dst, &err)
            }
            guard warped == 0 else {
                throw CaptureError(.detectionFailed, "cannot turn the face upright: \(err.text)")
            }
            var count: Int32 = 0
            var rows = [Float](repeating: 0, count: 16 * Int(CVB_YUNET_ROW))
            let status = crop.withBridgeImage { dst in
                rows.withUnsafeMutableBufferPointer { cvb_yunet_detect(uprightYuNet, &dst, $0.baseAddress, 16, &count, &err) }
            }
            guard status == 0 else { throw CaptureError(.detectionFailed, "YuNet failed: \(err.text)") }
            let faces = (0..<min(Int(count), 16)).map { i in
                Array(rows[(i * Int(CVB_YUNET_ROW))..<((i + 1) * Int(CVB_YUNET_ROW))]).map(Double.init)
            }
            func distance(_ r: [Double]) -> Double { hypot(r[0] + r[2] / 2 - centre, r[1] + r[3] / 2 - centre) }
            guard let r = faces.min(by: { distance($0) < distance($1) }), distance(r) < Double(side) / 4 else { break }
            let box = CGRect(x: r[0], y: r[1], width: r[2], height: r[3])
            let marks = (0..<5).map { CGPoint(x: r[4 + 2 * $0], y: r[5 + 2 * $0]) }
            let residual = FaceGeometry.roll(marks)
            // Crop → image: undo the scale, then turn back by `estimate` (the inverse of the
            // rotation OpenCV applied, in y-down pixels).
            let a = estimate * .pi / 180
            let back = marks.map { p -> CGPoint in
                let x = (Double(p.x) - centre) / scale
                let y = (Double(p.y) - centre) / scale
                return CGPoint(
                    x: Double(c.box.midX) + x * cos(a) - y * sin(a), y: Double(c.box.midY) + x * sin(a) + y * cos(a))
            }
            estimate += residual
            look = UprightLook(
                roll: estimate, yaw: FaceGeometry.yaw(marks), landmarks: back,
                plausible: FaceGeometry.isPlausible(
                    box: box, landmarks: marks, maximumEyeDistanceRatio: configuration.maximumEyeDistanceRatio))
            // Done when nearly upright, or (second look) as soon as the upright face is plausible.
            if abs(residual) < 3 || (passes > 1 && look?.plausible == true) { break }
        }
        return look
    }

    private func regionStats(_ image: PixelBuffer, _ rect: CGRect, sample: Int32, nearest: Bool) throws(CaptureError) -> (
        mean: Double, stddev: Double
    ) {
        var mean = 0.0
        var sd = 0.0
        var err = cvb_error()
        let status = image.withBridgeImage { img in
            cvb_image_region_stats(
                &img, Int32(rect.minX), Int32(rect.minY), Int32(rect.width), Int32(rect.height), sample, nearest ? 1 : 0,
                &mean, &sd, &err)
        }
        guard status == 0 else {
            throw CaptureError(.detectionFailed, "cannot measure the image: \(err.text)")
        }
        return (mean, sd)
    }

    /// Greedy non-maximum suppression: best score first; a box is dropped when its IoU with a
    /// kept box exceeds `threshold`, or when most (60 %) of it lies inside a kept box (a
    /// partial face cut by a tile edge).
    static func suppressOverlaps(_ candidates: [Candidate], threshold: Double) -> [Candidate] {
        var kept: [Candidate] = []
        for c in candidates.sorted(by: { $0.score > $1.score }) {
            let overlaps = kept.contains { k in
                let inter = k.box.intersection(c.box)
                let shared = inter.isNull ? 0 : Double(inter.width * inter.height)
                let smaller = Double(min(k.box.width * k.box.height, c.box.width * c.box.height))
                return k.box.intersectionOverUnion(c.box) > threshold || (smaller > 0 && shared / smaller > 0.6)
            }
            if !overlaps { kept.append(c) }
        }
        return kept
    }
}

/// Landmark geometry in pixels (YuNet order: right eye, left eye, nose, right and left mouth corner).
enum FaceGeometry {
    /// Degrees, positive clockwise in the image: the eye line's angle.
    static func roll(_ m: [CGPoint]) -> Double {
        atan2(Double(m[1].y - m[0].y), Double(m[1].x - m[0].x)) * 180 / .pi
    }

    /// Degrees, positive towards the image's right: atan(r / 0.5), r = the nose tip's offset
    /// from the eye/mouth midline along the eye line, over the eye distance.
    static func yaw(_ m: [CGPoint]) -> Double {
        let (u, d) = eyeAxis(m)
        guard d > 0 else { return 0 }
        let eyes = mid(m[0], m[1])
        let mouth = mid(m[3], m[4])
        let centre = mid(eyes, mouth)
        let r = Double((m[2].x - centre.x) * u.x + (m[2].y - centre.y) * u.y) / d
        return atan(r / 0.5) * 180 / .pi
    }

    /// The checks described on `FaceDetector` (landmarks inside the box, vertical order, eye distance).
    static func isPlausible(box: CGRect, landmarks m: [CGPoint], maximumEyeDistanceRatio: Double) -> Bool {
        guard box.width > 0, box.height > 0, m.count == 5 else { return false }
        for p in m {
            let rx = Double((p.x - box.minX) / box.width)
            let ry = Double((p.y - box.minY) / box.height)
            if rx < -0.05 || rx > 1.05 || ry < 0.15 || ry > 0.95 { return false }
        }
        let (u, d) = eyeAxis(m)
        guard d > 0, d / Double(box.width) <= maximumEyeDistanceRatio else { return false }
        let down = CGPoint(x: -u.y, y: u.x)  // perpendicular to the eye line, pointing to the chin
        let eyes = mid(m[0], m[1])
        func depth(_ p: CGPoint) -> Double { Double((p.x - eyes.x) * down.x + (p.y - eyes.y) * down.y) / d }
        let nose = depth(m[2])
        let mouth = depth(mid(m[3], m[4]))
        return nose > 0.15 && mouth > nose
    }

    private static func eyeAxis(_ m: [CGPoint]) -> (CGPoint, Double) {
        let dx = Double(m[1].x - m[0].x)
        let dy = Double(m[1].y - m[0].y)
        let d = (dx * dx + dy * dy).squareRoot()
        return d > 0 ? (CGPoint(x: dx / d, y: dy / d), d) : (CGPoint(x: 1, y: 0), 0)
    }

    private static func mid(_ a: CGPoint, _ b: CGPoint) -> CGPoint { CGPoint(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2) }
}

extension CGRect {
    /// Intersection over union of two rectangles (0 when either is empty).
    public func intersectionOverUnion(_ other: CGRect) -> Double {
        let inter = intersection(other)
        guard !inter.isNull else { return 0 }
        let i = Double(inter.width * inter.height)
        let u = Double(width * height + other.width * other.height) - i
        return u > 0 ? i / u : 0
    }

    /// How well `other` matches this rectangle as the same object seen again: their IoU when
    /// it is at least `minimumIoU`; otherwise, when the centres are closer than
    /// `maximumCentreDistance` × this rectangle's longer side, a value under `minimumIoU`
    /// falling with the distance; else 0 (not the same object). Shared by `FaceTracker`'s
    /// matching and the search near known faces.
    func matchAffinity(_ other: CGRect, minimumIoU: Double, maximumCentreDistance: Double) -> Double {
        let iou = intersectionOverUnion(other)
        if iou >= minimumIoU { return iou }
        let side = max(width, height)
        guard side > 0 else { return 0 }
        let distance = hypot(midX - other.midX, midY - other.midY) / side
        guard distance < maximumCentreDistance else { return 0 }
        // Below any overlap match, falling with distance.
        return minimumIoU * (1 - distance / maximumCentreDistance) * 0.99
    }

    /// The rectangle rounded outwards to whole numbers.
    var roundedOutwards: CGRect {
        let x0 = minX.rounded(.down)
        let y0 = minY.rounded(.down)
        return CGRect(x: x0, y: y0, width: maxX.rounded(.up) - x0, height: maxY.rounded(.up) - y0)
    }
}
