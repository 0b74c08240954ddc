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

    /// The box in pixels of the image it was found in, and that image's space, as the detector
    /// measured it: a tracker keeps following the face in pixels from here, with no round trip
    /// through device space. Nil for detections made by hand. Not part of equality.
    package var pixelBox: PixelBox?

    /// A box in pixels of one image.
    package struct PixelBox: Sendable {
        /// The box, in pixels.
        package var bounds: CGRect
        /// The image's space (its size).
        package var space: DeviceSpace

        /// A box in pixels of an image of `space`.
        package init(bounds: CGRect, space: DeviceSpace) {
            self.bounds = bounds
            self.space = space
        }
    }

    /// Creates a detection.
    public init(bounds: CGRect, landmarks: [CGPoint], confidence: Double, rollAngle: Double?, yawAngle: Double?) {
        self.bounds = bounds
        self.landmarks = landmarks
        self.confidence = confidence
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
    }

    public static func == (a: FaceDetection, b: FaceDetection) -> Bool {
        a.bounds == b.bounds && a.landmarks == b.landmarks && a.confidence == b.confidence && a.rollAngle == b.rollAngle
            && a.yawAngle == b.yawAngle
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bounds.origin.x)
        hasher.combine(bounds.origin.y)
        hasher.combine(bounds.size.width)
        hasher.combine(bounds.size.height)
        hasher.combine(confidence)
    }
}

/// Finds faces in one image, without a session (like ZBar's image scanner): YuNet-n 2023
/// (Models/face_detection_yunet_n_2023.onnx, run through `cv::dnn` by the shim) with the Haar
/// cascade (`cv::CascadeClassifier`, Models/haarcascade_frontalface_alt2.xml) as the fallback
/// when YuNet cannot be loaded. Any YuNet file can be given to `init(configuration:yuNetModel:haarCascade:)`,
/// including YuNet 2022mar (through `cv::FaceDetectorYN`).
///
/// What cvcam adds to plain YuNet. Each part was chosen on one real-photo split (`faces/`) and
/// kept only because it also pays on another it was not chosen on (`faces-validate/`;
/// `Tools/bench-faces`, figures in `Tools/Bench/README.md`):
/// - **Mirrored search, fused** `searchesMirroredImage` (`standard`): the image is also searched
///   mirrored left-right, and the two searches are fused (weighted box fusion): a face's score
///   is the mean of its two scores, a view that missed it counting 0; box and landmarks are the
///   score-weighted mean. A face looks like a face both ways round, while YuNet's mistakes on
///   texture and clutter rarely repeat in the mirror image, so agreement sorts them better than
///   one score does. Twice the cost of a search; video presets leave it off.
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
/// - **Score threshold** `scoreThreshold`: 0.71 on the fused score (`standard`), 0.7 on one
///   search's (`realTime`, `tiled`). The 2023 models' scores top out near 0.93, so OpenCV's 0.9
///   for 2022mar would drop most faces.
/// - **Cat-face check** `catFaceVeto` (`standard`): a face that OpenCV's cat-face cascade
///   (Models/haarcascade_frontalcatface_extended.xml) finds again with 22 or more neighbour votes
///   is dropped. Every YuNet scores cat and dog faces like human ones (their landmarks fit a human
///   template, so geometry does not tell them apart, nor does YuNet-s or 2022mar); a detector
///   trained on cats does. 22 is one more vote than the cascade gave any human face of the
///   tuning split. Dogs have no such second opinion here.
/// - **Content gate.** A frame whose luma standard deviation is below `minimumFrameContrast`
///   (black, a lens cap) is not searched at all: it costs nothing, and YuNet 2022mar reports
///   phantom faces on such frames.
/// - **Optional checks** (off by default: on the tuning split they cost recall with YuNet-n and
///   removed no false face; `bench-faces --all-levers` measures them on both splits): a box contrast floor `minimumContrast`, and the landmark geometry
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
        /// Faces scoring below this are dropped (YuNet scores 0…1; with `searchesMirroredImage`,
        /// the fused score).
        public var scoreThreshold: Double
        /// Also search the image mirrored left-right and fuse the two searches (see
        /// `FaceDetector`): a face keeps a high score only when both views agree. Whole-image
        /// searches only (`detect(in:regionOfInterest:)`); twice their cost.
        public var searchesMirroredImage: Bool
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
        /// Faces that OpenCV's cat-face cascade finds again with at least this many neighbour
        /// votes (in a 160 px square of twice the face) are dropped as cats; nil: no check. Needs
        /// the cascade file (see `init(configuration:yuNetModel:haarCascade:catFaceCascade:)`).
        public var catFaceVeto: Int?
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
            scoreThreshold: Double = 0.71, searchesMirroredImage: Bool = true, minimumFaceSize: Double = 15,
            checksLandmarkGeometry: Bool = false,
            uprightRecheckScore: Double? = nil, minimumDetectionDimension: Int? = nil,
            maximumDetectionDimension: Int? = 2048, tileSize: Int? = nil, tileOverlap: Double = 0.25,
            largeFaceDimension: Int? = 640, largeFaceMinimumSize: Double = 60, largeFaceScoreThreshold: Double = 0.8,
            nmsThreshold: Double = 0.3, minimumFrameContrast: Double = 2, catFaceVeto: Int? = 22, minimumContrast: Double = 0,
            maximumEyeDistanceRatio: Double = 0.65, rollRefinementThreshold: Double = 8, maximumRollRefinements: Int = 0,
            haarScaleFactor: Double = 1.1, haarMinimumNeighbours: Int = 4
        ) {
            self.scoreThreshold = scoreThreshold
            self.searchesMirroredImage = searchesMirroredImage
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
            self.catFaceVeto = catFaceVeto
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
        public static let realTime = Configuration(
            scoreThreshold: 0.7, searchesMirroredImage: false, maximumDetectionDimension: 640, largeFaceDimension: nil,
            catFaceVeto: nil)
        /// `standard` at most 1280 px, plus full-resolution 640 px tiles for larger frames
        /// (distant faces in 1080p video), at roughly 3–4× the cost of a 1280 px search.
        public static let tiled = Configuration(
            scoreThreshold: 0.7, searchesMirroredImage: false, maximumDetectionDimension: 1280, tileSize: 640,
            largeFaceDimension: nil, catFaceVeto: nil)
        /// `standard` plus roll refined for up to two tilted faces per image (error ≤ 5° up to
        /// ±30° instead of up to 25° too much), at one 160×160 YuNet run per refined face.
        public static let accurateAngles = Configuration(maximumRollRefinements: 2)
        /// YuNet as OpenCV runs it: the image at its own size, no checks, no size floor, one
        /// threshold (0.9 is OpenCV's sample default for 2022mar). For comparisons.
        public static func plain(scoreThreshold: Double = 0.9) -> Configuration {
            Configuration(
                scoreThreshold: scoreThreshold, searchesMirroredImage: false, minimumFaceSize: 0, checksLandmarkGeometry: false,
                uprightRecheckScore: nil,
                minimumDetectionDimension: nil, maximumDetectionDimension: nil, largeFaceDimension: nil, minimumFrameContrast: 0,
                catFaceVeto: nil, minimumContrast: 0, rollRefinementThreshold: .infinity)
        }

        /// The score the networks report candidates down to: `scoreThreshold`, or with the
        /// mirrored search the least score that can still fuse to `scoreThreshold` (the other
        /// view scoring at most 1), but not under 0.3.
        var candidateThreshold: Double {
            searchesMirroredImage ? max(0.3, 2 * scoreThreshold - 1) : scoreThreshold
        }
    }

    /// The detector that runs (YuNet unless it could not be loaded or Haar was asked for).
    public let backend: Backend
    /// The policy in force.
    public let configuration: Configuration

    let lock = NSLock()
    let yuNet: YuNetNetwork?
    /// A second YuNet fixed at 160×160 for upright looks, so the main one keeps its input size
    /// (changing it rebuilds YuNet's priors, which costs more than the small look itself).
    let uprightYuNet: YuNetNetwork?
    /// A third YuNet fixed at `nearSearchInput` square for searches near known faces.
    let nearYuNet: YuNetNetwork?
    let cascade: OpaquePointer?
    /// OpenCV's cat-face cascade for `catFaceVeto`; nil when not given or not loadable.
    let catCascade: OpaquePointer?
    /// The YuNet model file, for the networks `sizedYuNet(width:height:)` creates.
    let yuNetModelPath: String?
    /// The Haar cascade file, when the cascade runs (`model` reports it).
    let haarCascadePath: String?
    /// One YuNet network per input size the searches use (whole frame, coarse pass, the two
    /// halves: four for a video), created on first use and never reshaped. Reshaping one network
    /// on every frame made OpenCV rebuild its layers each time (heaptrack: 9,520 layer
    /// allocations from `Net::forward` in 150 s of soak) and the heap swing by ±5 MB; upstream
    /// reports memory accumulating that way (opencv/opencv#24836). Costs ~10 MB resident once.
    /// Used only while `lock` is held.
    var sizedYuNets: [Int: YuNetNetwork] = [:]
    /// Sizes beyond this many (a folder of photos of many sizes) share `yuNet`, reshaped per image.
    static let sizedYuNetLimit = 6
    /// BGR buffers for the scaled copies the searches make, by size, reused from frame to frame
    /// (a video needs four or five sizes) instead of a new allocation per search. Used only
    /// while `lock` is held; nothing returned to callers refers to them.
    var scratch: [Int: PixelBuffer] = [:]
    /// The mirrored copy of the image a whole search makes (`searchesMirroredImage`), kept for
    /// the next image of its size. Used only while `lock` is held.
    var mirrorScratch: PixelBuffer?

    private static let logger = Logger(label: "cvcam.faces")
    private static let fallbackAnnounced = Atomic<Bool>(false)

    /// Loads the given model files: YuNet when `yuNetModel` loads, else the Haar cascade
    /// (`cvb_yunet_create`, `cvb_cascade_create`). Throws `faceModelUnavailable` when neither loads,
    /// and `moduleUnavailable` when the shipped layout's objdetect module, which runs both, cannot
    /// be loaded (`cvb_module_load`): the models are not at fault then.
    /// `catFaceCascade` (OpenCV's haarcascade_frontalcatface_extended.xml) serves `catFaceVeto`;
    /// without it, or when it does not load, that check is skipped.
    public init(
        configuration: Configuration = .standard, yuNetModel: URL?, haarCascade: URL?, catFaceCascade: URL? = nil
    ) throws(CaptureError) {
        self.configuration = configuration
        try bridgeCall(.moduleUnavailable, "loading OpenCV's objdetect module") { cvb_module_load(CVB_MODULE_OBJDETECT, &$0) }
        var err = cvb_error()
        catCascade = catFaceCascade.flatMap { url in
            FileManager.default.fileExists(atPath: url.path) ? cvb_cascade_create(url.path, &err) : nil
        }
        var yuNetProblem = "no YuNet model given"
        if let yuNetModel {
            if FileManager.default.fileExists(atPath: yuNetModel.path),
                let network = YuNetNetwork(
                    model: yuNetModel.path, width: 320, height: 320, scoreThreshold: configuration.candidateThreshold,
                    nmsThreshold: configuration.nmsThreshold, topK: 5000, error: &err)
            {
                yuNet = network
                yuNetModelPath = yuNetModel.path
                haarCascadePath = nil
                // Scored at 0.5: the face is already known to be there.
                uprightYuNet = YuNetNetwork(
                    model: yuNetModel.path, width: 160, height: 160, scoreThreshold: 0.5, nmsThreshold: 0.3, topK: 16,
                    error: &err)
                nearYuNet = YuNetNetwork(
                    model: yuNetModel.path, width: Self.nearSearchInput, height: Self.nearSearchInput,
                    scoreThreshold: configuration.scoreThreshold, nmsThreshold: configuration.nmsThreshold, topK: 64,
                    error: &err)
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
                haarCascadePath = haarCascade.path
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
        if let cascade { cvb_cascade_release(cascade) }
        if let catCascade { cvb_cascade_release(catCascade) }
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
            scale: Double(Self.nearSearchInput) / Double(side), network: nearYuNet ?? yuNet)
        if let uprightYuNet { _ = try? uprightYuNet.detect(try scratchBuffer(width: 160, height: 160), capacity: 16) }
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
        return try detect(in: image, nearPixels: faces.map(space.pixelRect(fromDevice:)), regionOfInterest: regionOfInterest)
    }

    /// `detect(in:near:regionOfInterest:)` with the boxes already in pixels of `image` (a tracker
    /// that follows faces in pixels hands them over as they are).
    package func detect(
        in image: PixelBuffer, nearPixels known: [CGRect], regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    ) throws(CaptureError) -> [FaceDetection]? {
        let roi = DeviceSpace(image).wholePixels(regionOfInterest)?.cgRect ?? .zero
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
                let candidates = try detectScaled(source, region: square, scale: scale, network: nearYuNet ?? yuNet)
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
}
