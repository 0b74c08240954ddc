import CVBridge
import Foundation
import Synchronization

/// Reads QR codes and barcodes in one image, with no session (like ZBar's image scanner):
/// zxing-cpp and ZBar decode, OpenCV helps them where they alone fail.
///
/// zxing-cpp reads the 2-D types (QR, Micro QR, Data Matrix, Aztec, PDF417) in the whole frame
/// first: its own localisation is cheap and it reads perspective and damaged codes ZBar misses.
/// A detector for QR and Micro QR only skips that read where no finder pattern shows, so frames
/// without a code stay cheap.
/// ZBar then reads the linear types, and for QR the areas of finder patterns no code read so
/// far explains (small modules, several codes per frame), with the passes below; zxing-cpp also
/// reads the images those passes rectify, and the inverted frame when a light-on-dark finder
/// shows. A code both decoders read is reported once, with zxing-cpp's bytes (ZBar converts
/// ECI-declared payloads to UTF-8 and does not say so).
///
/// What it does beyond one ZBar scan (each step was kept because it measurably adds decodes
/// on the generated corpus and the real dev set; `Tools/Bench/README.md` has the numbers):
/// - inverted (light-on-dark) codes are read by default;
/// - every code in the frame is reported, each once;
/// - payloads are ZBar's raw bytes (`ZBAR_CFG_BINARY`), turned into text by a documented
///   policy (`CodeText`), so `payload` is exact and binary payloads have a nil `stringValue`;
/// - rescue passes (full-size, inverted, OpenCV localisation, rectification, sharpening) run
///   only when a cheap look at the frame finds code-like detail and, for QR, a finder pattern,
///   so frames without codes stay cheap: a QR-only detector spends no ZBar scan at all on a
///   frame where no finder pattern shows (under a tenth of one plain full-size ZBar scan), and
///   scans only the areas around the finders it sees before anything else.
///
/// Coordinates: results are in device space (normalised 0…1, origin top-left, the frame as
/// delivered). `corners` start at the code's own top-left (for QR the finder pattern that is
/// top-left when the symbol is upright) and go clockwise, as ZBar orders its polygon.
///
/// Threading: thread-safe; calls are serialised on an internal lock (one ZBar scanner per
/// detector). Use one detector per thread for parallel scanning.
public final class CodeDetector: Sendable {
    /// The code types this detector looks for (default: QR). Types neither decoder reads here are ignored.
    public var metadataObjectTypes: Set<MetadataObjectType> {
        get { state.withLock { $0.types } }
        set { state.withLock { $0.types = newValue.intersection(Self.availableMetadataObjectTypes) } }
    }

    /// Only this device-space rectangle is searched, and only codes whose centre lies in it are
    /// reported (`AVCaptureMetadataOutput.rectOfInterest`). Default: the whole frame.
    public var rectOfInterest: CGRect {
        get { state.withLock { $0.rectOfInterest } }
        set { state.withLock { $0.rectOfInterest = newValue } }
    }

    /// Whether light-on-dark codes are read too (default true).
    public var decodesInvertedCodes: Bool {
        get { state.withLock { $0.passes.inverted } }
        set { state.withLock { $0.passes.inverted = newValue } }
    }

    /// The 2-D code types (matrix and stacked): QR, Micro QR, Data Matrix, Aztec, PDF417.
    public static let twoDimensionalTypes: Set<MetadataObjectType> = [.qr, .microQR, .dataMatrix, .aztec, .pdf417]

    /// The code types this machine's ZBar can read (probed once with
    /// `zbar_image_scanner_set_config(type, ZBAR_CFG_ENABLE, 1)`), and the 2-D types zxing-cpp reads.
    public static var availableMetadataObjectTypes: Set<MetadataObjectType> { available }

    private static let available: Set<MetadataObjectType> = {
        var out = ZXingFormat.types
        guard let scanner = try? ZBarScanner() else { return out }
        for (type, z) in CodeSymbology.table {
            scanner.setConfig(symbology: z, config: CodeSymbology.configEnable, value: 0)
            if scanner.setConfig(symbology: z, config: CodeSymbology.configEnable, value: 1),
                scanner.config(symbology: z, config: CodeSymbology.configEnable) == 1
            {
                out.insert(type)
            }
        }
        return out
    }()

    /// Which passes run. SPI so `bench-codes` can measure what each pass adds; not API.
    @_spi(Benchmark) public struct Passes: Hashable, Sendable {
        public var inverted = true
        public var gate = true
        public var halfScale = true
        public var locate = true
        /// Mean |Sobel x| + |Sobel y| a gate cell needs to count as code-like detail.
        public var detailThreshold: Float = 40
        /// Use OpenCV's multi-code localiser (slower) instead of the single-code one.
        public var locateMultiple = false
        public var binarize = true
        /// QR only: skip every full-size pass on a frame the half-size scan read nothing in unless
        /// `FinderEvidence` sees a finder pattern in it.
        public var finderGate = true
        /// QR only: before the whole half-size scan, scan just the areas of the finder triples
        /// `FinderEvidence` sees (half size first, then full size), and stop before any ZBar
        /// scan when it sees no finder at full, half or quarter size.
        public var finderLocate = true
        /// How much darker than the mean of the 31×31 pixels around it a pixel must be to count
        /// as dark when `FinderEvidence` looks at the half- and quarter-size frame (gray levels;
        /// see `FinderEvidence`).
        public var finderThresholdOffset = 6.0
        /// The half-size finder look's local mean counts a flat 8-pixel block (levels spanning
        /// at most this many) that is lighter than the texture near it as that texture
        /// (`FinderEvidence.texturedMean`): a faint code whose quiet zone gives onto a brighter
        /// surround (a lit wall, a white sticker edge) no longer has its quiet zone and light
        /// rings pulled dark. 24 is zxing's block contrast for the same test (its
        /// HybridBinarizer); nil: every pixel counts as it is.
        public var flatBlockRange: Int32? = 24
        /// The same at full size. 0: there, finders of codes with modules near 2 px are too soft
        /// for any offset (a code beside another one was lost with 2 or more).
        public var fullSizeFinderThresholdOffset = 0.0
        /// Whether the full-size look's row test also takes small patterns (under 2.5-px modules)
        /// within half a pixel more than half a module, kept only as one of three finders placed
        /// as a code's (`FinderEvidence.Finder.looseRow`): a code of 2-px modules turned a little
        /// has rings of 1–3 px on every row.
        public var looseSmallFinders = true
        /// Module size (pixels) the area of a finder triple is warped upright to before ZBar
        /// scans it (`ScanRun.scanUpright`); 0 scans the axis-aligned area at the frame's or the
        /// half-size frame's own scale instead. ZBar's cost follows the pixels it scans.
        /// 2.5 px: fewer pixels than the frame's own scale for the same decodes; 2 px made
        /// rotated codes fail the upright scan more often (figures in `Tools/Bench/README.md`).
        public var areaModuleSize = 2.5
        /// QR only: a finder triple whose affine warp read nothing is rectified again through
        /// the homography its three finders' outlines fit (`QRPerspective`: codes tilted
        /// 30–50°). Needs `locate`.
        public var perspective = true
        /// QR only: where a finder's outline does not read (rings of 1–2 px), the perspective
        /// rectification fits squares drawn from the three finders' centres and row and column
        /// module measures instead (`QRPerspective.measuredOutlines`). Needs `perspective`.
        public var measuredOutlines = true
        /// QR only: where the perspective rectification read nothing, its module map is fitted
        /// again through the code's alignment patterns, found one by one near where the map puts
        /// them (`QRAlignment`): the finders' outlines pin three corners, and a steep tilt's far
        /// corner is extrapolated modules off. Needs `perspective`.
        public var alignmentRefit = true
        /// QR only, frames of the finder gate's size: where nothing was read, the triples the
        /// gate's own look completes with a finder the half- and full-size looks missed are read
        /// (`ScanRun.readGateLookTriples`: a steep tilt's far finder, rows of 2 px, or a faint
        /// code's shows under one threshold and not another). Needs `locate`.
        public var gateLookTriples = true
        /// QR only: a finder triple's upright image that read nothing plain, inverted or in
        /// perspective is binarised at the code's own level (Otsu over its three finder squares,
        /// when their colours lie 12–100 levels apart: `CodeLevel`) and read again: a faint code
        /// beside a brighter surround (a white frame, a lit wall) pulls every threshold taken over
        /// its surroundings past its light modules (`ScanRun.readAtCodeLevel`). Images under 360
        /// px, read whole, are then also read around their finder triples when nothing else read.
        public var codeLevel = true
        /// QR and Micro QR in an image under 360 px (a still, read whole) that no pass read but
        /// where a finder look saw a finder: zxing-cpp reads it again at twice its size
        /// (bilinear), as the other 2-D types' small images are. zxing-cpp 1.4's binarizer loses
        /// a small photo's 2–3-px modules softened by its JPEG; twice the pixels keeps them.
        public var doubledSmallRead = true
        /// QR and Micro QR in a camera-sized frame (360 px and more) in which nothing was read
        /// but the half- or quarter-size look saw a finder of large modules: zxing-cpp reads that
        /// smaller image (`ScanRun.readWhereLargeFinders`).
        public var largeModuleRead = true
        /// ZBar's linear reads it may have wrong (an EAN/UPC number read on few scan lines, every
        /// Code 128: ZBar drops FNC4) are checked against zxing-cpp's read of the frame, and
        /// zxing-cpp's different payload over the same bars replaces them
        /// (`ScanRun.checkDoubtfulLinearReads`).
        public var linearReadCheck = true
        /// A retail number ZBar read only on the unsharp-masked copy of the frame is checked as a
        /// weak one is (`linearReadCheck`): the mask's overshoot moves bar edges. Needs
        /// `linearReadCheck`.
        public var sharpenedReadCheck = true
        /// A UPC-E or EAN-8 ZBar read whose scan lines cross a longer symbol's bars (more bars
        /// than its own, no quiet zone between) is dropped: the first half of a UPC-A or EAN-13
        /// read as a short symbol (`RetailFragment`).
        public var retailFragmentCheck = true
        /// A strip under 32 pixels across its bars in which no linear code was read is read again
        /// with its lines repeated to 32 (`ScanRun.readStretchedStrip`): each decoder wants a
        /// linear symbol on two or more of its scan lines.
        public var stripRead = true
        /// An image under 360 px (long side at most 640) in which no linear code was read is
        /// read by zxing-cpp at twice its size, unsharp-masked, for Code 128 and Code 93
        /// (`ScanRun.readDoubledSharpened`).
        public var doubledLinearRead = true
        /// Two EAN/UPC numbers read over the same bars that zxing-cpp's read of their area
        /// confirms neither of are both dropped (one is a misread, nothing says which); off, the
        /// one read on more scan lines stays (`ScanRun.resolveRetailConflicts`).
        public var unconfirmedConflictDropped = true
        /// Aztec: where zxing-cpp reads nothing it can vouch for in a symbol whose core was read,
        /// cvcam decodes the symbol's data itself (`AztecData`). Needs `locate`.
        public var aztecData = true
        /// Aztec in a recompressed photo (WebP, JPEG): a core that reads at no coarser scale is
        /// read at the next finer one, and the symbol warped upright is read at 10 pixels per
        /// module where 5 read nothing (`ScanRun.aztecCore`, `readRectified`). Needs `locate`.
        public var aztecSoftScales = true
        /// Data Matrix: where zxing-cpp read none in an image below the gate's size, cvcam's own
        /// locator fits the symbol's sides and zxing-cpp reads a clean image of its modules
        /// (`DataMatrixLocator`). Needs `locate`.
        public var dataMatrixLocator = true
        /// Aztec symbols in stills read whole looked for again with the dark shrunk by a pixel
        /// (`CodeImaging.darkShrunk`): ink spread widens a bullseye's dark rings past the ring
        /// checks. Needs `locate`.
        public var inkSpread = true
        /// zxing-cpp reads the whole frame first (2-D types; see `zxingFinderGate`), rectified
        /// areas, and the inverted frame when a light-on-dark finder shows.
        public var zxing = true
        /// QR and Micro QR only, frames ≥ 360 px: zxing-cpp reads the frame only when
        /// `FinderEvidence` sees a finder pattern (one is enough: Micro QR has one) at half, full
        /// or quarter size, or in the gate's own full-size look (`zxingGateFullSizeOffset`).
        /// Frames without a code skip zxing-cpp's whole-frame read, its largest cost there.
        public var zxingFinderGate = true
        /// The threshold offset of the gate's last look at full size, taken only when the
        /// other finder checks saw nothing (nil: none). The checks' full-size offset 0 misses
        /// the finders of some small codes in photos that a higher offset sees; a high offset
        /// also sees fewer false finders in noise, so fewer code-free frames pass. It compares with
        /// the local mean the offset-0 look computed (`ScanRun.fullSizeMean`): no second box filter.
        public var zxingGateFullSizeOffset: Double? = 15
        /// Every how many rows that last look scans (the other looks: every second row). Its
        /// row scan is what it costs a frame without a code; the finders it exists for (modules
        /// near 3 px) have centres ~9 px tall, crossed by every fourth row at least twice, but
        /// tilted ones match 1:1:3:1:1 on fewer rows, so above step 2 one matching row counts.
        public var zxingGateRowStep = 4
        /// With the finder gate: where the gate saw finders, ZBar's upright scans around them
        /// run first, and zxing-cpp reads the whole frame only while a finder seen is outside
        /// every code read (its whole-frame read costs several times those scans).
        public var zbarAroundFindersFirst = true
        /// Data Matrix, Aztec and PDF417 in frames of `ScanRun.gateSize` or more: zxing-cpp reads
        /// only the types whose `SymbolCues` the finder looks saw.
        public var typeGate = true
        public init() {}
        /// One ZBar scan of the frame, nothing else.
        public static var zbarOnly: Passes {
            var p = Passes()
            p.inverted = false
            p.gate = false
            p.halfScale = false
            p.locate = false
            p.binarize = false
            p.finderGate = false
            p.finderLocate = false
            p.areaModuleSize = 0
            p.zxing = false
            p.stripRead = false
            p.retailFragmentCheck = false
            p.unconfirmedConflictDropped = false
            return p
        }
    }

    /// How often each kind of pass ran since the detector was created. SPI so tests can pin
    /// which passes a frame triggers (behaviour, not time); not API.
    @_spi(Benchmark) public struct PassCounts: Hashable, Sendable {
        /// `zbar_scan_image` calls, any image.
        public var zbarScans = 0
        /// Pixels those calls scanned (ZBar's cost follows them).
        public var zbarPixels = 0
        /// Finder-pattern checks (`FinderEvidence`).
        public var finderChecks = 0
        /// Finder-pattern candidates those checks saw.
        public var findersSeen = 0
        /// Regions that went through the rescue passes (full-size, inverted, localise, sharpen).
        public var rescues = 0
        /// OpenCV QR localisations.
        public var localisations = 0
        /// Perspective maps fitted again through alignment patterns (`QRAlignment`).
        public var alignmentRefits = 0
        /// Triples completed by the gate look's finders and read (`ScanRun.readGateLookTriples`).
        public var gateLookTriples = 0
        /// `ZXing::ReadBarcodes` calls, any image.
        public var zxingReads = 0
        /// Gated frames (`Passes.typeGate`) whose finder looks saw an Aztec, PDF417 or Data
        /// Matrix cue (`SymbolCues`), per kind: each opens zxing-cpp's read of that type.
        public var aztecCues = 0
        public var pdf417Cues = 0
        public var dataMatrixCues = 0
    }

    /// Pass counts so far (see `PassCounts`).
    @_spi(Benchmark) public var passCounts: PassCounts { state.withLock { $0.counts } }

    private struct State: ~Copyable {
        var counts = PassCounts()
        /// ZBar for QR (every pass of `ScanRun`), and for the linear types (one scan per frame):
        /// two scanners, so that the QR passes do not pay for the linear decoders on every line;
        /// a third for the areas warped upright around finders (`ScanRun.uprightLineStep`).
        var scanner: ZBarScanner
        var linearScanner: ZBarScanner
        var uprightScanner: ZBarScanner
        var zxing: ZXingReader
        var configured: Set<MetadataObjectType>?
        var types: Set<MetadataObjectType>
        var rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
        var passes = Passes()
    }
    private let state: Mutex<State>

    /// Creates a detector for `metadataObjectTypes` (default QR) (`zbar_image_scanner_create`,
    /// `cvb_zxing_reader_create`).
    public convenience init(metadataObjectTypes: Set<MetadataObjectType> = [.qr]) throws(CaptureError) {
        try self.init(metadataObjectTypes: metadataObjectTypes, passes: Passes())
    }

    /// A detector running only `passes` (for `bench-codes`).
    @_spi(Benchmark) public init(metadataObjectTypes: Set<MetadataObjectType> = [.qr], passes: Passes) throws(CaptureError) {
        let scanner = try ZBarScanner()
        let linearScanner = try ZBarScanner()
        let uprightScanner = try ZBarScanner()
        let zxing = try ZXingReader()
        state = Mutex(
            State(
                scanner: scanner, linearScanner: linearScanner, uprightScanner: uprightScanner, zxing: zxing,
                types: metadataObjectTypes.intersection(Self.available),
                passes: passes))
    }

    /// Finds the codes in one frame (BGR, BGRA, gray, YUYV or NV12), in device space.
    ///
    /// Throws `CaptureError` only when a buffer cannot be allocated or converted; an image
    /// without codes gives an empty array. `detect(in:time:inputID:)` (CaptureKit) makes
    /// metadata objects of them.
    public func detections(in pixelBuffer: PixelBuffer) throws(CaptureError) -> [CodeDetection] {
        try state.withLock { (s: inout State) throws(CaptureError) -> [CodeDetection] in
            if s.configured != s.types {
                s.scanner.enable(s.types.intersection(ScanRun.qrTypes))
                s.uprightScanner.enable(s.types.intersection(ScanRun.qrTypes))
                s.uprightScanner.setLineStep(ScanRun.uprightLineStep)
                s.linearScanner.enable(ScanRun.zbarTypes(s.types).subtracting(ScanRun.qrTypes))
                s.configured = s.types
            }
            let space = DeviceSpace(pixelBuffer)
            // Under 8 pixels a side no 2-D code can be read; a linear one can be a strip of a
            // few rows (a line-scan crop).
            let linear = !s.types.isSubset(of: ZXingFormat.matrixTypes)
            guard let roi = space.wholePixels(s.rectOfInterest), !s.types.isEmpty,
                linear ? max(roi.width, roi.height) >= 8 : min(roi.width, roi.height) >= 8
            else { return [] }
            var gray = try CodeImaging.gray(pixelBuffer)
            if roi != PixelRect(x: 0, y: 0, width: pixelBuffer.width, height: pixelBuffer.height) {
                gray = try CodeImaging.crop(gray, roi)
            }
            // QR and Micro QR (finder patterns: gated passes), then the other types (one read
            // each), merged; each part runs only for the types asked for.
            var found: [ScannedSymbol] = []
            // A strip under 8 pixels (a line-scan crop) holds no 2-D code: only the linear types
            // are read there (the 2-D passes would halve it to nothing).
            let types = min(roi.width, roi.height) >= 8 ? s.types : s.types.subtracting(ZXingFormat.matrixTypes)
            let qr = types.intersection(ScanRun.qrTypes), others = types.subtracting(ScanRun.qrTypes)
            // One set of finder looks per frame: the QR run notes the other 2-D types' cues on its rows.
            var looks = FrameLooks()
            if s.passes.typeGate && s.passes.zxing { looks.cueKinds = SymbolCues.Kinds(others) }
            if !qr.isEmpty {
                var run = ScanRun(scanner: s.scanner, zxing: s.zxing, passes: s.passes, types: qr)
                run.uprightScanner = s.uprightScanner
                run.counts = s.counts
                run.looks = looks
                defer { s.counts = run.counts }
                try run.scan(gray)
                found = run.found
                looks = run.looks
            }
            if !others.isEmpty {
                var run = ScanRun(scanner: s.linearScanner, zxing: s.zxing, passes: s.passes, types: others)
                run.counts = s.counts
                run.looks = looks
                run.readBefore = found.map(\.points)
                defer { s.counts = run.counts }
                try run.scanOtherTypes(gray)
                found += run.found
            }
            return found.compactMap { symbol -> CodeDetection? in
                let corners = symbol.points.map {
                    space.devicePoint(fromPixel: CGPoint(x: Double($0.x) + Double(roi.x), y: Double($0.y) + Double(roi.y)))
                }
                let bounds = DeviceSpace.boundingBox(of: corners)
                guard s.rectOfInterest.contains(CGPoint(x: bounds.midX, y: bounds.midY)) else { return nil }
                return CodeDetection(
                    type: symbol.type, bounds: bounds, stringValue: symbol.text, payload: symbol.bytes,
                    corners: corners, quality: symbol.quality)
            }
        }
    }
}

/// One code a `CodeDetector` read in one image, in device space; the metadata stage adds the
/// frame's time and input to make a `MetadataMachineReadableCodeObject`.
///
/// Value type; thread-safe.
public struct CodeDetection: Sendable, Hashable {
    /// The symbology.
    public var type: MetadataObjectType
    /// Bounding box of `corners` in device space.
    public var bounds: CGRect
    /// The payload as text when it is valid text; nil for binary payloads (`CodeText`).
    public var stringValue: String?
    /// The payload's raw bytes, exactly as encoded.
    public var payload: [UInt8]
    /// The symbol's corners in device space, clockwise from the code's own top-left.
    public var corners: [CGPoint]
    /// ZBar's quality figure (higher is better; for QR, 1).
    public var quality: Int

    /// Creates a detection.
    public init(
        type: MetadataObjectType, bounds: CGRect, stringValue: String?, payload: [UInt8], corners: [CGPoint], quality: Int
    ) {
        self.type = type
        self.bounds = bounds
        self.stringValue = stringValue
        self.payload = payload
        self.corners = corners
        self.quality = quality
    }
}
