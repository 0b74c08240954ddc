import CVBridge
import Foundation
import Synchronization

/// One detection: the passes over one gray image and what they found, merged.
///
/// Order (cheap first; later passes run only while nothing is found, and only where the gates
/// point). Each pass stays because removing it loses decodes or makes frames dearer on the
/// generated corpus and the dev set (`Tools/Bench/README.md` has the figures of each):
/// 0. QR-only detectors, frames ≥ 360 px: `FinderEvidence` on the half-size frame, then ZBar on
///    only the area each finder triple spans, warped upright at `Passes.areaModuleSize` and
///    scanned every second line (ZBar's cost follows the pixels scanned and a code rarely fills
///    the frame; zxing-cpp reads the area when ZBar does not), inverted too when the
///    finder is light-centred; then the same around the full-size finders. No finder at full,
///    half or quarter size and the frame stops before any ZBar scan.
/// 1. ZBar on the half-size frame (a quarter of the pixels; modules ≥ 3 px), only when 0. read
///    nothing or left a finder unexplained; after a read, a full-size scan of the detailed
///    regions it left, only when a finder outside the codes read remains.
/// 2. Gate: a grid of gradient energy (`cvb_image_detail_grid`, 16×16-pixel cells, mean
///    |Sobel| ≥ 40) at full size; smooth frames stop here; the rest is cropped to the hull of
///    the detailed cells.
/// 2b. Finder gate (QR-only detectors, frames ≥ 360 px): no 1:1:3:1:1 finder pattern (either
///    polarity) at full size, and the frame stops here.
/// 3. ZBar at full size on that region, then on its negative (light-on-dark codes).
/// 4. OpenCV's single-code localiser (`detect`), perspective rectification to an upright
///    300-pixel square, plain / Otsu / inverted.
/// 5. An unsharp-masked copy, for blur.
struct ScanRun {
    let scanner: ZBarScanner
    /// ZBar for the areas warped upright around finder triples (`scanUpright`), scanning every
    /// `uprightLineStep`-th line; `scanner` when nil.
    var uprightScanner: ZBarScanner?
    /// The line step of `uprightScanner`: the upright images have modules of
    /// `Passes.areaModuleSize` (2.5) pixels, so every second line still crosses each module row
    /// and finder at least once, for about 0.6 of the full scan's cost (`Tools/Bench/README.md`).
    static let uprightLineStep: Int32 = 2
    let zxing: ZXingReader
    let passes: CodeDetector.Passes
    /// What each decoder looks for: ZBar every type it has a number for (QR and linear),
    /// zxing-cpp the 2-D types.
    let types: Set<MetadataObjectType>
    let zxingTypes: Set<MetadataObjectType>
    /// The linear types zxing-cpp reads where ZBar read no linear code (one code per read).
    let zxingLinearTypes: Set<MetadataObjectType>
    /// Every type the detector looks for (payload conventions depend on it).
    let requested: Set<MetadataObjectType>
    /// Symbols found so far, in the gray image's pixels.
    var found: [ScannedSymbol] = []
    var counts = CodeDetector.PassCounts()
    /// What the finder looks saw in this frame; `CodeDetector` hands it from the QR run to the
    /// run of the other types, so a frame is looked at once.
    var looks = FrameLooks()
    /// Triples of small finders whose outlines did not read (`scanPerspective`): the squares
    /// `QRPerspective.measuredOutlines` draws for them, in `source`'s pixels, left for
    /// `readMeasuredTriples` to read only when no other pass read anything in the frame. In a
    /// frame of several codes, small finders of different codes make many such triples, each
    /// worth two more warps and reads of up to 900 px; a code seen steeply is one triple and the
    /// frame's only code.
    var measuredTriples: [DeferredTriple] = []
    /// Triples whose perspective read failed (`scanPerspective`): the squares drawn from their
    /// finders' measures, left for `readRefitTriples` (alignment patterns pin the map) once
    /// nothing else in the frame read.
    var refitTriples: [DeferredTriple] = []
    /// Whether ZBar has scanned around the finders seen (`readAroundSeenFinders`).
    var scannedAroundFinders = false
    /// The corners of the codes an earlier run of this frame read (the QR run's, for the run of
    /// the other types): no cue inside them opens a read (`cuesSeen`), and the finder looks this
    /// run takes leave them flat (`FinderEvidence.flatSpans`).
    var readBefore: [[CGPoint]] = []
    /// Finder triples `scanUpright` left for `readLargeTriples`: their upright image is over the
    /// half-size scan's budget, but their modules are too small for that scan.
    var largeTriples: [(finders: [FinderEvidence.Finder], source: PixelBuffer, scale: (Double, Double))] = []

    /// A triple's finder squares (`source`'s pixels, which `scale` maps to the frame's) kept
    /// for a read once nothing else in the frame read.
    typealias DeferredTriple = (outlines: [[CGPoint]], source: PixelBuffer, scale: (Double, Double), lightCentred: Bool)

    /// Cells of the gate's grid, in pixels.
    static let cell = 16

    init(scanner: ZBarScanner, zxing: ZXingReader, passes: CodeDetector.Passes, types: Set<MetadataObjectType>) {
        self.scanner = scanner
        self.zxing = zxing
        self.passes = passes
        self.types = Self.zbarTypes(types)
        self.zxingTypes = passes.zxing ? types.intersection(ZXingFormat.matrixTypes) : []
        self.zxingLinearTypes = passes.zxing ? types.intersection(ZXingFormat.linearTypes) : []
        self.requested = types
    }

    mutating func scan(_ gray: PixelBuffer) throws(CaptureError) {
        if passes == .zbarOnly {
            add(try zbarScan(gray), mapping: nil)
            return
        }
        // QR and Micro QR show finder patterns: with the gate, zxing-cpp leaves a frame without
        // one unread (ZBar's own finder gate stops it too).
        let finderGated = passes.zxingFinderGate && passes.finderGate && zxingTypes.isSubset(of: [.qr, .microQR])
            && min(gray.width, gray.height) >= 360
        var readFrame = !zxingTypes.isEmpty
        if readFrame && finderGated { readFrame = try anyFinder(gray) }
        if readFrame && finderGated && passes.zbarAroundFindersFirst && zbarReadsAroundFinders {
            let half = try halfImage(gray)
            try readAroundSeenFinders(gray, half)
            let seen = try seenFinders(gray, half)
            readFrame = found.isEmpty || !unexplained(seen).isEmpty
        }
        if readFrame {
            _ = try zxingRead(gray, mapping: nil, hints: .defaults(zxingTypes))
        }
        if !types.isEmpty {
            try scanWithZBar(gray)
        }
        // A linear code ZBar missed (damaged bars, ITF with a tail, a blurred Codabar).
        if !zxingLinearTypes.isEmpty && !found.contains(where: { zxingLinearTypes.contains($0.type) }) {
            _ = try zxingRead(gray, mapping: nil, hints: .defaults(zxingLinearTypes))
        }
        try resolveRetailConflicts(gray)
        // zxing-cpp 1.4 has no inversion of its own: the inverted frame, when nothing was read
        // and a light-centred finder shows (any frame, for types without finder patterns).
        if found.isEmpty, passes.inverted, !zxingTypes.isEmpty {
            let qrOnly = zxingTypes.isSubset(of: [.qr, .microQR])
            if !qrOnly || (looks.halfFinders ?? []).contains(where: { !$0.dark })
                || (looks.fullFinders ?? []).contains(where: { !$0.dark })
            {
                _ = try zxingRead(try CodeImaging.inverted(gray), mapping: nil, hints: .defaults(zxingTypes))
            }
        }
        // Below the gate's size no pass above starts from finders: where the whole-image reads
        // found nothing, the finder triples' upright reads (with the code's own level) still may.
        if found.isEmpty, passes.codeLevel, passes.finderLocate, types.contains(.qr), min(gray.width, gray.height) < 360 {
            try readAroundSeenFinders(gray, try halfImage(gray))
        }
        try readDoubledSmallImage(gray)
        try readLargeTriples(gray)
        if found.isEmpty { try readMeasuredTriples() }
        if found.isEmpty { try readRefitTriples() }
        if found.isEmpty, passes.gateLookTriples, passes.locate, types.contains(.qr), min(gray.width, gray.height) >= 360 {
            try readGateLookTriples(gray)
        }
        if finderGated { try readWhereLargeFinders(gray) }
    }

    /// A frame in which nothing was read although the half- or quarter-size look saw a finder
    /// of large modules, read by zxing-cpp at that size (`Passes.largeModuleRead`); QR and Micro
    /// QR. zxing-cpp 1.4 thresholds each 8-pixel block by the 40 pixels around it: inside wide,
    /// soft modules (a code held close to the camera) that neighbourhood holds no edge to set a
    /// level by. A QR code there is mostly ZBar's; a Micro QR code (one finder, no ZBar reader)
    /// had no other pass.
    mutating func readWhereLargeFinders(_ gray: PixelBuffer) throws(CaptureError) {
        guard passes.largeModuleRead, found.isEmpty, let half = looks.half else { return }
        let qrTypes = zxingTypes.intersection(Self.qrTypes)
        guard !qrTypes.isEmpty else { return }
        let sx = Double(gray.width) / Double(half.width), sy = Double(gray.height) / Double(half.height)
        if let quarter = looks.quarter, !(looks.quarterFinders ?? []).isEmpty {
            let qx = sx * Double(half.width) / Double(quarter.width), qy = sy * Double(half.height) / Double(quarter.height)
            if try zxingRead(quarter, mapping: .scaling(qx, qy), hints: .defaults(qrTypes)) { return }
        }
        if let halfFinders = looks.halfFinders, halfFinders.contains(where: { $0.module >= Self.largeHalfModule }) {
            _ = try zxingRead(half, mapping: .scaling(sx, sy), hints: .defaults(qrTypes))
        }
    }

    /// The module (pixels of the half-size frame) from which a finder there counts as large for
    /// `readWhereLargeFinders`: 8 pixels at full size, a 24-pixel centre.
    static let largeHalfModule = 4.0

    /// An image under the gate's size in which nothing was read and a finder look saw a
    /// finder, read by zxing-cpp at twice its size (`Passes.doubledSmallRead`); QR and Micro QR.
    /// Besides the frame's looks, a full-size look on every row: a small, soft finder's diagonal
    /// cross-checks pass only through its centre row, which every second row can miss.
    mutating func readDoubledSmallImage(_ gray: PixelBuffer) throws(CaptureError) {
        let qrTypes = zxingTypes.intersection(Self.qrTypes)
        guard passes.doubledSmallRead, found.isEmpty, !qrTypes.isEmpty, min(gray.width, gray.height) < Self.gateSize,
            max(gray.width, gray.height) <= Self.upscaleLimit
        else { return }
        if try seenFinders(gray, try halfImage(gray)).isEmpty {
            counts.finderChecks += 1
            guard try !FinderEvidence.finders(gray, mean: try fullSizeMean(gray), rowStep: 1).isEmpty else { return }
        }
        _ = try zxingRead(try CodeImaging.doubled(gray), mapping: .scaling(0.5, 0.5), hints: .defaults(qrTypes))
    }

    /// The triples `scanUpright` set aside (`largeTriples`) that no code read explains, read
    /// around their finders after all: a high-version code of 2–3-px modules filling the frame.
    mutating func readLargeTriples(_ gray: PixelBuffer) throws(CaptureError) {
        let triples = largeTriples
        largeTriples = []
        for (t, source, scale) in triples
        where !unexplained(t.map { CGPoint(x: $0.centre.x * scale.0, y: $0.centre.y * scale.1) }).isEmpty {
            _ = try scanUpright(t, in: source, scale: scale, frame: gray, overBudget: true)
        }
    }

    /// Two different EAN/UPC numbers read over the same bars are one misread: a symbol holds one
    /// number, and a digit or parity misjudged on a damaged line can still satisfy the single
    /// check digit. zxing-cpp reads the area around both; the number it reads stays; when it
    /// reads neither, neither stays (`Passes.unconfirmedConflictDropped`); where zxing-cpp did not
    /// look (off, or an area under 8 px), the one ZBar read on more scan lines.
    mutating func resolveRetailConflicts(_ gray: PixelBuffer) throws(CaptureError) {
        let retail = found.indices.filter { CodeConventions.retailTypes.contains(found[$0].type) }
        guard retail.count >= 2 else { return }
        var dropped = Set<Int>()
        for a in retail {
            for b in retail where b > a && !dropped.contains(a) && !dropped.contains(b) {
                let boxA = DeviceSpace.boundingBox(of: found[a].points), boxB = DeviceSpace.boundingBox(of: found[b].points)
                guard Self.overBarsOfOneCode(boxA, boxB),
                    CodeConventions.gtin(found[a]) != CodeConventions.gtin(found[b])
                else { continue }
                let union = boxA.union(boxB)
                let pad = max(union.width, union.height) / 2 + 8
                let area = union.insetBy(dx: -pad, dy: -pad).intersection(CGRect(x: 0, y: 0, width: gray.width, height: gray.height))
                var confirmed: [Bool] = [false, false]
                var looked = false
                if zxingLinearTypes.isEmpty == false || passes.zxing, area.width >= 8, area.height >= 1 {
                    looked = true
                    let region = PixelRect(
                        x: Int(area.minX), y: Int(area.minY), width: Int(area.width.rounded(.down)),
                        height: Int(area.height.rounded(.down)))
                    counts.zxingReads += 1
                    let reads = try zxing.read(try CodeImaging.crop(gray, region), hints: .defaults(Self.zxingRetailTypes))
                        .map { CodeConventions.gtin(CodeConventions.normalised($0, requested: requested)) }
                    confirmed = [a, b].map { reads.contains(CodeConventions.gtin(found[$0])) }
                }
                if confirmed[0] != confirmed[1] {
                    dropped.insert(confirmed[0] ? b : a)
                } else if looked && !confirmed[0] && passes.unconfirmedConflictDropped {
                    // Neither confirmed: one is a misread and nothing says which (a misread can
                    // hold on more lines than the true number: a glare across the bars' top).
                    dropped.formUnion([a, b])
                } else {
                    dropped.insert(found[a].quality >= found[b].quality ? b : a)
                }
            }
        }
        found = found.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
    }

    /// Whether two linear reads lie over the same bars: along the reading direction (the longer
    /// side) they overlap by most of the shorter read, and across it they are at most a quarter
    /// of the code's length apart (each decoder's polygon may be a few scan lines, not the
    /// whole bar height). Two codes side by side, or one above the other, are not.
    static func overBarsOfOneCode(_ a: CGRect, _ b: CGRect) -> Bool {
        let horizontal = max(a.width, b.width) >= max(a.height, b.height)
        let (a0, a1, b0, b1) = horizontal ? (a.minX, a.maxX, b.minX, b.maxX) : (a.minY, a.maxY, b.minY, b.maxY)
        let (c0, c1, d0, d1) = horizontal ? (a.minY, a.maxY, b.minY, b.maxY) : (a.minX, a.maxX, b.minX, b.maxX)
        let along = min(a1, b1) - max(a0, b0)
        let length = max(a1 - a0, b1 - b0)
        let gap = max(0, max(c0, d0) - min(c1, d1))
        return along >= 0.6 * min(a1 - a0, b1 - b0) && gap <= 0.25 * length
    }

    /// The longest side of a frame that `scanOtherTypes` also reads at twice its size.
    static let upscaleLimit = 640

    /// The shortest side from which frames are gated: finder patterns and `SymbolCues` decide
    /// what is read (camera frames, where most frames hold no code); smaller images are read
    /// whole, which costs little.
    static let gateSize = 360

    /// Data Matrix symbols zxing-cpp 1.4 missed in the whole frame, read in a crop around each
    /// timing edge a cue saw: its detector starts from the image's centre and loses a symbol
    /// elsewhere in a cluttered frame; in the crop the symbol is the centre. The crop reaches
    /// one and a half edge lengths beyond the edge each way (a square symbol, or a rectangular
    /// one whose long side is the edge, fits) and `edgeCropAlong` along it from the edge's
    /// middle (a row crosses a turned symbol's edge for part of its length, from one end); when
    /// nothing is read there, a second crop reaches `edgeCropReaches`' last along the symbol's
    /// other side (a rectangular one whose short side is the edge: up to 36 modules against 8).
    /// Where zxing-cpp reads nothing in a crop, cvcam's own locator (`readLocatedDataMatrix`)
    /// tries it, thresholded halfway between the edge's light and dark modules: the crop's
    /// clutter, not the symbol, decides a threshold taken from the whole crop (Otsu), and a
    /// faint symbol then vanishes. An edge whose middle lies in a crop tried already is skipped
    /// unless it is at least `longerCrossing` times as long as the edge that crop was cut for:
    /// rows a few pixels apart cross a turned edge for different lengths, and a crop sized by a
    /// short crossing cuts the symbol off. At most four crops a frame.
    mutating func readDataMatrixAroundEdges(_ gray: PixelBuffer) throws(CaptureError) {
        var tried: [(area: CGRect, edge: Double)] = []
        let frame = CGRect(x: 0, y: 0, width: gray.width, height: gray.height)
        for edge in looks.cues.dataMatrix
        where !tried.contains(where: { $0.area.contains(CGPoint(x: edge.midX, y: edge.midY)) && edge.width < Self.longerCrossing * $0.edge }) {
            let l = max(edge.width, 16)
            for reach in Self.edgeCropReaches where tried.count < 4 {
                let along = reach == Self.edgeCropReaches[0] ? Self.edgeCropAlong : 1.5
                let area = CGRect(x: edge.midX - along * l, y: edge.midY - reach * l, width: 2 * along * l, height: 2 * reach * l)
                    .intersection(frame)
                guard !area.isNull, area.width >= 16, area.height >= 16,
                    !found.contains(where: { $0.type == .dataMatrix && DeviceSpace.boundingBox(of: $0.points).intersects(area) })
                else { break }
                tried.append((area, edge.width))
                if try readDataMatrix(in: area, of: gray, edge: edge) { break }
            }
        }
    }

    /// A PDF417 symbol whose start or stop pattern a cue saw and that zxing-cpp 1.4 did not read
    /// in the frame: the area around the patterns' crossings (their box, and half its longer
    /// side or 160 px more each way: one pattern seen says not which side the symbol lies on,
    /// and this pass is for modules of about 2 px), at twice its size and unsharp-masked, as
    /// the doubled linear read does for bars of about two pixels (a PDF417 row is a barcode);
    /// faint 2-px modules merge in the frame. A symbol standing on its end (a cue the column walk
    /// found, `walkStanding`) lies along the columns from its pattern, as far as its data
    /// reaches: its crop reaches up and down as far as `pdf417CropLimit` allows (160 px cut a
    /// faint standing symbol 310 px long off). Not over `pdf417CropLimit` px a side.
    mutating func readPDF417AroundPatterns(_ gray: PixelBuffer) throws(CaptureError) {
        let box = DeviceSpace.boundingBox(of: looks.cues.pdf417)
        guard !box.isNull else { return }
        let margin = max(160, max(box.width, box.height) / 2)
        let vertical = !looks.cues.standingPDF417.isEmpty ? max(margin, (Double(Self.pdf417CropLimit) - box.height) / 2 - 1) : margin
        let area = box.insetBy(dx: -margin, dy: -vertical).intersection(CGRect(x: 0, y: 0, width: gray.width, height: gray.height))
        guard !area.isNull, area.width >= 16, area.height >= 16, max(area.width, area.height) <= Double(Self.pdf417CropLimit) else { return }
        let region = PixelRect(
            x: Int(area.minX), y: Int(area.minY), width: Int(area.width.rounded(.down)), height: Int(area.height.rounded(.down)))
        _ = try zxingRead(
            try Self.doubledSharpened(try CodeImaging.crop(gray, region)), mapping: .scaling(0.5, 0.5, offsetX: Double(region.x), offsetY: Double(region.y)), hints: .defaults([.pdf417]))
    }

    /// The longest side of `readPDF417AroundPatterns`' crop (doubled: 1280 px).
    static let pdf417CropLimit = 640

    /// How much longer than the edge a crop was cut for another crossing inside that crop must
    /// be to get crops of its own (`readDataMatrixAroundEdges`): the same edge crossed a pixel
    /// longer would only spend the frame's four crops again.
    static let longerCrossing = 1.25

    /// How far the crops of `readDataMatrixAroundEdges` reach across the edge each way, in edge
    /// lengths: a square symbol's side, then a rectangular one's long side (8×36 modules: 4.5).
    static let edgeCropReaches = [1.5, 4.6]

    /// How far the first crop of `readDataMatrixAroundEdges` reaches along the edge each way from
    /// its middle, in edge lengths: the symbol whose edge a row crossed for 45 % of its length
    /// from one end still fits (one and a half cut off the far end of such crossings).
    static let edgeCropAlong = 2.0

    /// zxing-cpp, then cvcam's locator, on the crop `area` of `gray` around the Data Matrix
    /// timing edge `edge`; true when a new symbol was read.
    mutating func readDataMatrix(in area: CGRect, of gray: PixelBuffer, edge: CGRect) throws(CaptureError) -> Bool {
        let region = PixelRect(
            x: Int(area.minX), y: Int(area.minY), width: Int(area.width.rounded(.down)), height: Int(area.height.rounded(.down)))
        let crop = try CodeImaging.crop(gray, region)
        if try zxingRead(
            crop, mapping: .scaling(1, 1, offsetX: Double(region.x), offsetY: Double(region.y)), hints: .defaults([.dataMatrix]))
        {
            return true
        }
        guard passes.dataMatrixLocator else { return false }
        return try readLocatedDataMatrix(crop, offset: CGPoint(x: region.x, y: region.y), threshold: Self.ladderMidLevel(gray, edge))
    }

    /// The level halfway between the light and the dark modules of a Data Matrix timing edge
    /// (`edge`: a segment along one row of `gray`), nil when it lies outside the image.
    static func ladderMidLevel(_ gray: PixelBuffer, _ edge: CGRect) -> Double? {
        let y = Int(edge.minY), x0 = max(0, Int(edge.minX)), x1 = min(gray.width, Int(edge.maxX))
        guard gray.pixelFormat == .gray, y >= 0, y < gray.height, x1 - x0 >= 2 else { return nil }
        return withExtendedLifetime(gray) {
            let row = gray.baseAddress.assumingMemoryBound(to: UInt8.self) + y * gray.bytesPerRow + x0
            return SymbolCues.levels(row, count: x1 - x0).map { ($0.light + $0.dark) / 2 }
        }
    }

    /// The kinds of `SymbolCues` any finder look of this frame saw: the half-, full- and
    /// quarter-size looks and the gate's last look, each taken once per frame (the QR run
    /// may have taken some already).
    mutating func cuesSeen(_ gray: PixelBuffer) throws(CaptureError) -> SymbolCues.Kinds {
        let half = try halfImage(gray)
        _ = try halfSizeFinders(half)
        _ = try fullSizeFinders(gray)
        _ = try quarterSizeFinders(half)
        _ = try gateLookFinders(gray)
        looks.cues = looks.cues.outside(readBefore).withoutFaintEdges(in: gray, minimum: Self.edgeContrast)
        var seen = looks.cues.seen
        // A bullseye counts when the core around it reads (orientation marks and the mode
        // message's Reed–Solomon check): zxing-cpp's detector needs the same, and texture that
        // mimics seven rings rarely passes it.
        if seen.contains(.aztec) {
            if looks.aztecCores == nil { looks.aztecCores = try aztecCores(gray, around: looks.cues.bullseyes) }
            if looks.aztecCores?.isEmpty ?? true { seen.remove(.aztec) }
        }
        return seen
    }

    /// The least contrast (gray levels, light modules over dark) of a Data Matrix timing edge
    /// that opens a read (`SymbolCues.withoutFaintEdges`): ladders made of a camera's sensor
    /// noise (σ 3) measure up to about 6, most symbol edges in camera frames 14 and more
    /// (`Tools/Bench/README.md` has every edge measured).
    static let edgeContrast = 10.0

    /// The types ZBar reads: QR and the linear ones. ZBar 0.23 has a number for PDF417 but
    /// decodes none (0 of the 33 in the barcode dev set); scanning for it cost every frame of a
    /// detector with PDF417 the linear passes' three whole-frame scans, most of a code-free
    /// frame's cost with every 2-D type. PDF417 is zxing-cpp's alone.
    static func zbarTypes(_ types: Set<MetadataObjectType>) -> Set<MetadataObjectType> {
        types.filter { CodeSymbology.zbar($0) != nil && $0 != .pdf417 }
    }

    /// The types with finder patterns, read by `scan` with its gated passes.
    static let qrTypes: Set<MetadataObjectType> = [.qr, .microQR]

    /// Every type but QR and Micro QR: zxing-cpp reads the frame once for the 2-D ones (Data
    /// Matrix, Aztec, PDF417) and, when it read none, its negative (zxing-cpp 1.4 has no
    /// inversion of its own); ZBar scans it for the linear ones (then at half size and
    /// sharpened while none is read), UPC-E and EAN-8 fragments of longer symbols are dropped
    /// (`RetailFragment`), zxing-cpp reads a linear code where ZBar read none (one per read), a
    /// strip is read with its lines repeated (`readStretchedStrip`) and a small image doubled and
    /// sharpened (`readDoubledSharpened`); then ZBar's doubtful reads are checked and EAN/UPC
    /// misreads resolved.
    mutating func scanOtherTypes(_ gray: PixelBuffer) throws(CaptureError) {
        if !zxingTypes.isEmpty {
            // Frames of the gate's size: zxing-cpp reads only the types whose cue a finder look
            // saw (`SymbolCues`); a frame without one costs those looks, which a detector that
            // also reads QR has taken already.
            let gated = passes.typeGate && min(gray.width, gray.height) >= Self.gateSize
            var readTypes = zxingTypes
            if gated {
                let seen = try cuesSeen(gray)
                readTypes = zxingTypes.intersection(seen.types)
                if seen.contains(.aztec) { counts.aztecCues += 1 }
                if seen.contains(.pdf417) { counts.pdf417Cues += 1 }
                if seen.contains(.dataMatrix) { counts.dataMatrixCues += 1 }
            }
            if !readTypes.isEmpty {
                if try !zxingRead(gray, mapping: nil, hints: .defaults(readTypes)) && passes.inverted {
                    _ = try zxingRead(try CodeImaging.inverted(gray), mapping: nil, hints: .defaults(readTypes))
                }
                if gated && readTypes.contains(.dataMatrix) && passes.locate {
                    try readDataMatrixAroundEdges(gray)
                }
                if gated && readTypes.contains(.pdf417) && passes.locate && !found.contains(where: { $0.type == .pdf417 }) {
                    try readPDF417AroundPatterns(gray)
                }
                // A still cropped to the symbol's edge has no quiet zone, which zxing-cpp 1.4's
                // Data Matrix detector needs to find the L; a light margin of a tenth of the
                // image gives it one, here and in the doubled read below. Only below the gate's
                // size: a camera frame that cuts a symbol off cuts its modules too.
                var base = gray
                var margin = 0.0
                if !found.contains(where: { readTypes.contains($0.type) }), passes.locate,
                    min(gray.width, gray.height) < Self.gateSize
                {
                    let m = max(4, max(gray.width, gray.height) / 10)
                    base = try CodeImaging.padded(gray, by: m, value: 255)
                    margin = Double(m)
                    _ = try zxingRead(base, mapping: .scaling(1, 1, offsetX: -margin, offsetY: -margin), hints: .defaults(readTypes))
                }
                // zxing-cpp 1.4's Data Matrix and Aztec detectors lose codes of a few pixels per
                // module seen at an angle; twice the pixels (bilinear) gives its edge tracing room.
                // Only for small frames (long side ≤ `Self.upscaleLimit`), where a read costs little.
                if !found.contains(where: { readTypes.contains($0.type) }), passes.locate,
                    max(gray.width, gray.height) <= Self.upscaleLimit
                {
                    _ = try zxingRead(
                        try CodeImaging.doubled(base), mapping: .scaling(0.5, 0.5, offsetX: -margin, offsetY: -margin),
                        hints: .defaults(readTypes))
                }
                // Symbols zxing-cpp 1.4's detector does not find (a stray speck, a slight turn,
                // uneven stretching, a bent surface): cvcam's own locator, in an image read whole;
                // in a camera frame, only in the crops around the cues' edges
                // (`readDataMatrixAroundEdges`), not over the whole cluttered frame.
                if !gated, readTypes.contains(.dataMatrix), passes.locate, passes.dataMatrixLocator,
                    !found.contains(where: { $0.type == .dataMatrix })
                {
                    try readLocatedDataMatrix(gray)
                }
            }
            // Aztec symbols zxing-cpp missed (steep angles, runes), from their bullseyes.
            if zxingTypes.contains(.aztec), passes.locate {
                let cores = gated ? looks.aztecCores ?? [] : try aztecCores(inWhole: gray)
                try readAztec(gray, cores)
                // A still printed with ink spread: its bullseye's dark rings several times as wide
                // as its light ones fail the ring checks. With the dark shrunk by a pixel they
                // pass; a still read whole where no Aztec symbol was read.
                if !gated, passes.inkSpread, !found.contains(where: { $0.type == .aztec }) {
                    let thinned = try CodeImaging.darkShrunk(gray)
                    try readAztec(thinned, try aztecCores(inWhole: thinned))
                }
            }
        }
        if !types.isEmpty {
            add(try zbarScan(gray), mapping: nil)
            // Bars that are too fine or too soft at full size: the half-size frame (its area
            // filter averages out print and sensor noise), then an unsharp-masked copy.
            if !linearRead, passes.halfScale, min(gray.width, gray.height) >= 360 {
                let half = try halfImage(gray)
                let scale = Homography.scaling(Double(gray.width) / Double(half.width), Double(gray.height) / Double(half.height))
                add(try zbarScan(half), mapping: scale)
            }
            if !linearRead, passes.binarize {
                let sharpened = try zbarScan(try CodeImaging.sharpened(gray, sigma: 2, amount: 1.5)).map {
                    var s = $0
                    s.onSharpenedCopy = true
                    return s
                }
                add(sharpened, mapping: nil)
            }
        }
        // A fragment read as a short symbol is no read: the passes below may read the whole one.
        dropRetailFragments(gray)
        if !zxingLinearTypes.isEmpty && !found.contains(where: { zxingLinearTypes.contains($0.type) }) {
            _ = try zxingRead(gray, mapping: nil, hints: .defaults(zxingLinearTypes))
        }
        try readStretchedStrip(gray)
        try readDoubledSharpened(gray)
        try checkDoubtfulLinearReads(gray)
        try resolveRetailConflicts(gray)
    }

    /// Linear reads ZBar may have wrong, checked against zxing-cpp's read of the whole frame: a
    /// retail number read on fewer than `weakRetailLines` scan lines (a digit misjudged on a few
    /// blurred or recompressed lines can still satisfy the single check digit) or only on the
    /// sharpened copy (`Passes.sharpenedReadCheck`: the mask moves bar edges), and every Code
    /// 128 (ZBar drops FNC4, so extended Latin-1 such as `ó` comes out as `s`). Where zxing-cpp
    /// reads another payload over the same bars (and not ZBar's), zxing-cpp's stays and ZBar's
    /// goes; where it reads nothing there, ZBar's stays. The bars' own crop was tried first:
    /// zxing-cpp read nothing in it where it read the whole photo. One read per frame, only in
    /// frames with such a read (`Passes.linearReadCheck`).
    mutating func checkDoubtfulLinearReads(_ gray: PixelBuffer) throws(CaptureError) {
        guard passes.linearReadCheck, passes.zxing else { return }
        // zxing-cpp's own reads carry its text; ZBar's do not.
        let doubtful = found.indices.filter {
            let read = found[$0]
            return read.decoderText == nil
                && (read.type == .code128
                    || (CodeConventions.retailTypes.contains(read.type)
                        && (read.quality < Self.weakRetailLines || (read.onSharpenedCopy && passes.sharpenedReadCheck))))
        }
        guard !doubtful.isEmpty else { return }
        // zxing-cpp's formats for them.
        var types: Set<MetadataObjectType> = []
        if doubtful.contains(where: { found[$0].type == .code128 }) { types.insert(.code128) }
        if doubtful.contains(where: { found[$0].type != .code128 }) { types.formUnion(Self.zxingRetailTypes) }
        counts.zxingReads += 1
        let reads = try zxing.read(gray, hints: .defaults(types)).map { CodeConventions.normalised($0, requested: requested) }
        for i in doubtful {
            let read = found[i]
            let retail = CodeConventions.retailTypes.contains(read.type)
            let box = DeviceSpace.boundingBox(of: read.points)
            let there = reads.filter {
                (retail ? CodeConventions.retailTypes.contains($0.type) : $0.type == read.type)
                    && Self.overBarsOfOneCode(box, DeviceSpace.boundingBox(of: $0.points))
            }
            let same = { (r: ScannedSymbol) in retail ? CodeConventions.gtin(r) == CodeConventions.gtin(read) : r.bytes == read.bytes }
            guard !there.contains(where: same), let other = there.first(where: { r in !found.contains { $0.isSameCode(as: r) } })
            else { continue }
            found[i] = other
        }
    }

    /// A strip fewer than `stripLines` pixels across its bars (a line-scan crop, one row of a
    /// symbol) in which no linear code was read, read again with its lines repeated to
    /// `stripLines` (nearest neighbour), by ZBar and zxing-cpp (`Passes.stripRead`). Each decoder
    /// wants a linear symbol on two or more of its scan lines (zxing-cpp 1.4's `minLineCount`,
    /// ZBar's consistency check), more than such a strip offers; a repeated line adds no evidence,
    /// so the symbol's own check (digit, start and stop patterns) is all that confirms it, as in
    /// a single scan line of a laser scanner. Bars run across the strip's short side.
    mutating func readStretchedStrip(_ gray: PixelBuffer) throws(CaptureError) {
        guard passes.stripRead, !types.union(zxingLinearTypes).subtracting(ZXingFormat.matrixTypes).isEmpty,
            min(gray.width, gray.height) < Self.stripLines, !linearRead
        else { return }
        let across = gray.height <= gray.width
        let stretched = try CodeImaging.resized(
            gray, width: across ? gray.width : Self.stripLines, height: across ? Self.stripLines : gray.height,
            interpolation: Interpolation.nearest)
        let back = Homography.scaling(
            Double(gray.width) / Double(stretched.width), Double(gray.height) / Double(stretched.height))
        // ZBar's quality counts the repeated lines: the strip's own lines are what it read.
        let lines = min(gray.width, gray.height)
        if !types.isEmpty {
            add(
                try zbarScan(stretched).map {
                    var s = $0
                    s.quality = max(1, s.quality * lines / Self.stripLines)
                    return s
                }, mapping: back)
        }
        if !zxingLinearTypes.isEmpty && !found.contains(where: { zxingLinearTypes.contains($0.type) }) {
            _ = try zxingRead(stretched, mapping: back, hints: .defaults(zxingLinearTypes))
        }
    }

    /// An image under the gate's size (`gateSize`; long side at most `upscaleLimit`) in which no
    /// linear code was read, read by zxing-cpp at twice its size and unsharp-masked
    /// (`Passes.doubledLinearRead`): bars blurred below a module's width in a small photo, which
    /// neither the frame nor its sharpened copy nor its double alone give zxing-cpp 1.4's
    /// edge-to-edge measures back. Only the types whose check characters vouch for every bar
    /// (Code 128, Code 93; DataBar is ZBar's alone here): the mask's overshoot moves edges, and a
    /// single check digit (EAN/UPC) or none (ITF, Code 39, Codabar) would let a moved edge through.
    mutating func readDoubledSharpened(_ gray: PixelBuffer) throws(CaptureError) {
        let checked = zxingLinearTypes.intersection(Self.fullyCheckedLinearTypes)
        guard passes.doubledLinearRead, !checked.isEmpty, min(gray.width, gray.height) < Self.gateSize,
            max(gray.width, gray.height) <= Self.upscaleLimit, !linearRead
        else { return }
        _ = try zxingRead(try Self.doubledSharpened(gray), mapping: .scaling(0.5, 0.5), hints: .defaults(checked))
    }

    /// `image` at twice its size (bilinear), unsharp-masked as ZBar's sharpened copy is: the
    /// doubled reads of bars and modules of about two pixels blurred below their width
    /// (`readDoubledSharpened`, `readPDF417AroundPatterns`).
    static func doubledSharpened(_ image: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        try CodeImaging.sharpened(try CodeImaging.doubled(image), sigma: 2, amount: 1.5)
    }

    /// Whether a linear code (any type but the 2-D ones) was read: the linear passes after the
    /// first run only while none was.
    var linearRead: Bool { found.contains { !ZXingFormat.matrixTypes.contains($0.type) } }

    /// Linear types zxing-cpp reads whose check characters cover every symbol character with
    /// more than one digit's worth of checking.
    static let fullyCheckedLinearTypes: Set<MetadataObjectType> = [.code128, .code93]

    /// The lines across a strip's bars under which `readStretchedStrip` repeats them.
    static let stripLines = 32

    /// ZBar's UPC-E and EAN-8 reads that are parts of a longer symbol's bars, dropped
    /// (`RetailFragment`, `Passes.retailFragmentCheck`).
    mutating func dropRetailFragments(_ gray: PixelBuffer) {
        guard passes.retailFragmentCheck else { return }
        found.removeAll { $0.decoderText == nil && RetailFragment.isFragment($0, in: gray) }
    }

    /// The retail formats zxing-cpp reads (ISBN is EAN-13 there), for the checks of ZBar's
    /// retail reads (`checkDoubtfulLinearReads`, `resolveRetailConflicts`).
    static let zxingRetailTypes: Set<MetadataObjectType> = [.ean13, .ean8, .upca, .upce]

    /// ZBar's scan lines under which a retail read is checked by zxing-cpp
    /// (`checkDoubtfulLinearReads`): the misreads seen on recompressed photos decoded on 5–9 lines.
    static let weakRetailLines = 10

    /// One zxing-cpp read, counted; true when it read a new symbol.
    mutating func zxingRead(_ image: PixelBuffer, mapping: Homography?, hints: ZXingHints) throws(CaptureError) -> Bool {
        counts.zxingReads += 1
        let before = found.count
        add(try zxing.read(image, hints: hints), mapping: mapping)
        return found.count > before
    }

    /// ZBar's passes (QR and linear types), cheap first; see the type's comment.
    mutating func scanWithZBar(_ gray: PixelBuffer) throws(CaptureError) {
        let big = min(gray.width, gray.height) >= 360
        var halfSize: PixelBuffer?
        if passes.halfScale && big {
            let half = try halfImage(gray)
            halfSize = half
            let sx = Double(gray.width) / Double(half.width), sy = Double(gray.height) / Double(half.height)
            var wholeHalf = true
            if zbarReadsAroundFinders {
                try readAroundSeenFinders(gray, half)
                // No finder at full, half or quarter size (modules ~1.5–17 px): no QR code here
                // for any pass to read.
                if found.isEmpty, try fullSizeFinders(gray).isEmpty, try halfSizeFinders(half).isEmpty,
                    try quarterSizeFinders(half).isEmpty
                {
                    return
                }
                // The whole half-size scan only when nothing was read or a finder seen there lies
                // outside every code read (another code may be there).
                let seen = try halfSizeFinders(half).map { CGPoint(x: $0.centre.x * sx, y: $0.centre.y * sy) }
                wholeHalf = found.isEmpty || seen.count > 16 || !unexplained(seen).isEmpty
            }
            if wholeHalf {
                add(try zbarScan(half), mapping: .scaling(sx, sy))
            }
            if !found.isEmpty {
                // Other codes may be too small for the half-size scan: read the detailed regions
                // not mostly taken by a code already found, at full size, plain scan only.
                // (Without this, 'multiple' drops from 100% to 84%.)
                if passes.finderGate && types == [.qr] {
                    // Another QR code shows finder patterns outside the codes already read; with
                    // none there, the full-size look would find nothing new.
                    let finders = try fullSizeFinders(gray)
                    if unexplained(finders.map(\.centre)).isEmpty { return }
                    // First only around those finders; the detailed regions when that is not enough.
                    if passes.finderLocate, try readAroundFinders(finders, in: gray).isEmpty { return }
                }
                let boxes = found.map { DeviceSpace.boundingBox(of: $0.points) }
                for region in try candidateRegions(gray) {
                    let r = CGRect(x: region.x, y: region.y, width: region.width, height: region.height)
                    let covered = boxes.reduce(0.0) { sum, b in
                        let i = b.intersection(r)
                        return sum + (i.isNull ? 0 : Double(i.width * i.height))
                    }
                    if covered < 0.5 * Double(r.width * r.height) {
                        let crop = try CodeImaging.crop(gray, region)
                        let offset = Homography.scaling(1, 1, offsetX: Double(region.x), offsetY: Double(region.y))
                        // A light-on-dark code beside a normal one: the plain scan cannot see it.
                        if try !attempt(crop, offset) && passes.inverted {
                            _ = try attempt(try CodeImaging.inverted(crop), offset)
                        }
                    }
                }
                return
            }
        }
        let regions: [PixelRect]
        if passes.gate {
            regions = try candidateRegions(gray)
        } else {
            regions = [PixelRect(x: 0, y: 0, width: gray.width, height: gray.height)]
        }
        if passes.finderGate && passes.halfScale && big && types == [.qr] && !regions.isEmpty {
            if try finderCandidates(gray, orAtHalfSize: halfSize).isEmpty { return }
        }
        for region in regions {
            counts.rescues += 1
            let crop = region.width == gray.width && region.height == gray.height ? gray : try CodeImaging.crop(gray, region)
            let offset = Homography.scaling(1, 1, offsetX: Double(region.x), offsetY: Double(region.y))
            try rescue(crop, offset: offset)
        }
    }

    /// Finder-pattern candidates (`FinderEvidence`) in `gray`, or when there are none there, in
    /// `half`: modules over ~4 px (blurred ones especially) make finders wider than the
    /// threshold's window; at half size they fit (blurred 52.5% → see bench-codes). Counted.
    mutating func finderCandidates(_ gray: PixelBuffer, orAtHalfSize half: PixelBuffer?) throws(CaptureError) -> [CGPoint] {
        var finders = try fullSizeFinders(gray).map(\.centre)
        if finders.isEmpty, let half { finders = try halfSizeFinders(half).map(\.centre) }
        return finders
    }

    /// Finders `FinderEvidence` sees in the full-size frame outside the codes read so far
    /// (their pixels are the busiest and cannot hold another code's finder); computed once per
    /// frame (counted as one finder check).
    mutating func fullSizeFinders(_ gray: PixelBuffer) throws(CaptureError) -> [FinderEvidence.Finder] {
        if let fullFinders = looks.fullFinders { return fullFinders }
        counts.finderChecks += 1
        let read = found.map { DeviceSpace.boundingBox(of: $0.points) }
        // Cues where they can matter: this look's threshold (offset 0) makes texture many short
        // runs, whose cue tests cost more than its finder scan. The gate's last look notes Data
        // Matrix timing edges on its rows of this frame (every `zxingGateRowStep`-th from row
        // 1); PDF417's start and stop patterns repeat down the symbol's every row, which the
        // other looks' rows cross, but a standing symbol's columns are walked here too (the gate
        // look's offset breaks a faint one's bars). Aztec bullseyes stay on every row: a centre
        // of 3-px modules crossed only on a gate row was lost.
        let gateRows = passes.zxingGateFullSizeOffset == nil ? 0 : passes.zxingGateRowStep
        var kinds = looks.cueKinds
        if gateRows > 0, kinds.remove(.pdf417) != nil { kinds.insert(.pdf417Standing) }
        let look = try FinderEvidence.look(
            gray, mean: try fullSizeMean(gray), ignoring: read, ignoringCodes: readBefore, offset: passes.fullSizeFinderThresholdOffset,
            cues: kinds, cuesElsewhere: (gateRows, .dataMatrix), pixelSlack: true, rowSlack: passes.looseSmallFinders)
        let finders = Self.keepingLooseFindersInTriples(look.finders)
        counts.findersSeen += finders.count
        looks.fullFinders = finders
        looks.cues = looks.cues + look.cues
        return finders
    }

    /// `finders` without those matched on a row only by the looser test (`Finder.looseRow`)
    /// that are not one of three finders placed as a code's (`triples`): a small turned code's
    /// finders come in threes, texture's seldom do.
    static func keepingLooseFindersInTriples(_ finders: [FinderEvidence.Finder]) -> [FinderEvidence.Finder] {
        guard finders.contains(where: \.looseRow) else { return finders }
        let codes = triples(finders).filter { $0.contains(where: \.looseRow) }
        return finders.filter { f in !f.looseRow || codes.contains { $0.contains { $0.centre == f.centre } } }
    }

    /// Finders in the frame at a quarter of its size (modules over ~9 px, too large for the
    /// threshold's window at half size); counted as one finder check.
    mutating func quarterSizeFinders(_ half: PixelBuffer) throws(CaptureError) -> [FinderEvidence.Finder] {
        if let quarterFinders = looks.quarterFinders { return quarterFinders }
        guard min(half.width, half.height) >= 64 else { return [] }
        counts.finderChecks += 1
        let quarter = try CodeImaging.resized(half, width: half.width / 2, height: half.height / 2)
        looks.quarter = quarter
        let toQuarter = 1 / (2 * looks.halfScale)
        let codes = readBefore.map { $0.map { CGPoint(x: $0.x * toQuarter, y: $0.y * toQuarter) } }
        let look = try FinderEvidence.look(quarter, ignoringCodes: codes, offset: passes.finderThresholdOffset, cues: looks.cueKinds)
        counts.findersSeen += look.finders.count
        looks.quarterFinders = look.finders
        looks.cues = looks.cues + look.cues.scaled(by: 2 * looks.halfScale)
        return look.finders
    }

    /// `gray` at half size (`cvb_image_resize`), computed once per frame.
    mutating func halfImage(_ gray: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if let half = looks.half { return half }
        let h = try CodeImaging.resized(gray, width: gray.width / 2, height: gray.height / 2)
        looks.half = h
        looks.halfScale = Double(gray.width) / Double(h.width)
        return h
    }

    /// Whether `FinderEvidence` sees a finder pattern at half, full or quarter size (modules
    /// ~1.5–17 px), or at full size with `Passes.zxingGateFullSizeOffset`; cheapest first, each
    /// check but the last kept for the passes after (counted as finder checks).
    mutating func anyFinder(_ gray: PixelBuffer) throws(CaptureError) -> Bool {
        let half = try halfImage(gray)
        if try !halfSizeFinders(half).isEmpty { return true }
        if try !fullSizeFinders(gray).isEmpty { return true }
        if try !quarterSizeFinders(half).isEmpty { return true }
        return try !gateLookFinders(gray).isEmpty
    }

    /// The gate's last look (`Passes.zxingGateFullSizeOffset`, every `zxingGateRowStep`-th row of
    /// the full-size frame), once per frame; none when the offset is nil. The only look that
    /// walks columns for a standing PDF417 pattern (`SymbolCues.Kinds.pdf417Standing`): its rows
    /// are few, and its offset leaves texture few long dark runs.
    mutating func gateLookFinders(_ gray: PixelBuffer) throws(CaptureError) -> [FinderEvidence.Finder] {
        if let gateFinders = looks.gateFinders { return gateFinders }
        guard let offset = passes.zxingGateFullSizeOffset else { return [] }
        counts.finderChecks += 1
        var kinds = looks.cueKinds
        if kinds.contains(.pdf417) { kinds.insert(.pdf417Standing) }
        let look = try FinderEvidence.lookInScannedRows(
            gray, mean: try fullSizeMean(gray), ignoringCodes: readBefore, offset: offset, rowStep: passes.zxingGateRowStep,
            cues: kinds)
        counts.findersSeen += look.finders.count
        looks.gateFinders = look.finders
        looks.cues = looks.cues + look.cues
        return look.finders
    }

    /// A frame in which nothing was read although the half- and full-size looks saw two or more
    /// finders between them: the triples the gate's look (its own threshold offset,
    /// `gateLookFinders`) completes with a finder neither saw, read as any triple
    /// (`scanUpright`). A code tilted steeply squeezes its far finders to rows of 2 px, and a
    /// faint one's finders come and go with the threshold: one look sees what another does not.
    /// At most 16 finders; stops at the first read.
    mutating func readGateLookTriples(_ gray: PixelBuffer) throws(CaptureError) {
        let near = { (a: FinderEvidence.Finder, b: FinderEvidence.Finder) in
            hypot(a.centre.x - b.centre.x, a.centre.y - b.centre.y) < 3 * max(a.module, b.module)
        }
        var full = looks.fullFinders ?? []
        for f in (looks.halfFinders ?? []).map({ $0.scaled(by: looks.halfScale) }) where !full.contains(where: { near($0, f) }) {
            full.append(f)
        }
        guard full.count >= 2, full.count <= 16 else { return }
        let extra = try gateLookFinders(gray).filter { g in !full.contains { near($0, g) } }
        guard !extra.isEmpty, full.count + extra.count <= 16 else { return }
        for t in Self.triples(full + extra)
        where t.contains(where: { f in extra.contains { $0.centre == f.centre } }) && !unexplained(t.map(\.centre)).isEmpty {
            counts.gateLookTriples += 1
            if try scanUpright(t, in: gray, scale: (1, 1), frame: gray) { return }
        }
    }

    /// `FinderEvidence.localMean` of the full-size frame, computed once per frame: both full-size
    /// looks compare with it.
    mutating func fullSizeMean(_ gray: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if let fullMean = looks.fullMean { return fullMean }
        let m = try FinderEvidence.localMean(gray)
        looks.fullMean = m
        return m
    }

    /// The half-size frame's local mean its finder look compares with, computed once per frame:
    /// `FinderEvidence.texturedMean` (`Passes.flatBlockRange`), else `localMean`, which the
    /// Aztec cores' threshold (`aztecBinary`) then shares.
    mutating func halfSizeMean(_ half: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if let halfMean = looks.halfMean { return halfMean }
        let m: PixelBuffer
        if let range = passes.flatBlockRange {
            m = try FinderEvidence.texturedMean(half, flatRange: range)
        } else {
            m = try FinderEvidence.localMean(half)
        }
        looks.halfMean = m
        return m
    }

    /// Whether ZBar's passes start from finder patterns (`readAroundSeenFinders`): QR-only, with
    /// the half-size scan.
    var zbarReadsAroundFinders: Bool {
        passes.finderLocate && passes.finderGate && passes.halfScale && types == [.qr]
    }

    /// ZBar's scans around the finder triples seen at half size (`scanAroundFinders`), then, when
    /// those read nothing, around the full-size ones (finders the half-size frame blurs away:
    /// rotated or small modules); once per frame, before or after zxing-cpp's whole-frame read.
    mutating func readAroundSeenFinders(_ gray: PixelBuffer, _ half: PixelBuffer) throws(CaptureError) {
        if scannedAroundFinders { return }
        scannedAroundFinders = true
        try scanAroundFinders(gray, half)
        if found.isEmpty { _ = try readAroundFinders(try fullSizeFinders(gray), in: gray) }
    }

    /// Every finder seen at half and full size, and at quarter size when that was looked at, in
    /// frame pixels (the full-size look ignores codes already read).
    mutating func seenFinders(_ gray: PixelBuffer, _ half: PixelBuffer) throws(CaptureError) -> [CGPoint] {
        let hx = Double(gray.width) / Double(half.width), hy = Double(gray.height) / Double(half.height)
        var points = try halfSizeFinders(half).map { CGPoint(x: $0.centre.x * hx, y: $0.centre.y * hy) }
        points += try fullSizeFinders(gray).map(\.centre)
        points += (looks.quarterFinders ?? []).map { CGPoint(x: $0.centre.x * 2 * hx, y: $0.centre.y * 2 * hy) }
        return points
    }

    /// Finders `FinderEvidence` sees in the half-size frame, in its pixels; computed once per
    /// frame (counted as one finder check).
    mutating func halfSizeFinders(_ half: PixelBuffer) throws(CaptureError) -> [FinderEvidence.Finder] {
        if let halfFinders = looks.halfFinders { return halfFinders }
        counts.finderChecks += 1
        let look = try FinderEvidence.look(
            half, mean: try halfSizeMean(half), offset: passes.finderThresholdOffset, cues: looks.cueKinds)
        counts.findersSeen += look.finders.count
        looks.halfFinders = look.finders
        looks.cues = looks.cues + look.cues.scaled(by: looks.halfScale)
        return look.finders
    }

    /// Scans only the areas of the finder triples seen at half size (one per triple not yet
    /// explained by a code read), warped upright at `Passes.areaModuleSize` (`scanUpright`); with
    /// that off, axis-aligned at full size when their modules are small (under 4 px in the
    /// frame; the half-size frame blurs them), else in the half-size frame. ZBar's cost grows with the
    /// pixels it scans, and a code rarely fills the frame.
    mutating func scanAroundFinders(_ gray: PixelBuffer, _ half: PixelBuffer) throws(CaptureError) {
        let finders = try halfSizeFinders(half)
        guard !finders.isEmpty, finders.count <= 16 else { return }
        let hx = Double(gray.width) / Double(half.width), hy = Double(gray.height) / Double(half.height)
        for triple in Self.triples(finders) {
            let centres = triple.map { CGPoint(x: $0.centre.x * hx, y: $0.centre.y * hy) }
            guard !unexplained(centres).isEmpty else { continue }
            let module = triple.map(\.module).min() ?? 0
            if passes.areaModuleSize > 0 {
                // Upright at the target module size, from the half-size frame when its modules are
                // at least that large (linear resampling aliases past a factor of about 2).
                let useHalf = module >= passes.areaModuleSize
                let t = useHalf ? triple : triple.map { f in
                    var f = f
                    f.centre = CGPoint(x: f.centre.x * hx, y: f.centre.y * hy)
                    f.module *= hx
                    return f
                }
                _ = try scanUpright(t, in: useHalf ? half : gray, scale: useHalf ? (hx, hy) : (1, 1), frame: gray)
            } else {
                // Modules under 2 px here are blurred by the half-size frame: take the area from
                // the full-size frame.
                let full = module < 2.0
                var box = Self.codeArea(triple)
                if full { box = CGRect(x: box.minX * hx, y: box.minY * hy, width: box.width * hx, height: box.height * hy) }
                try scanArea(box, of: full ? gray : half, scale: full ? (1, 1) : (hx, hy), frame: gray, finders: triple)
            }
        }
    }

    /// Full-size finders outside the codes read: scans the area around each group of them;
    /// returns those still unexplained afterwards.
    mutating func readAroundFinders(_ finders: [FinderEvidence.Finder], in gray: PixelBuffer) throws(CaptureError) -> [CGPoint] {
        let open = finders.filter { !unexplained([$0.centre]).isEmpty }
        guard !open.isEmpty, open.count <= 16 else { return open.map(\.centre) }
        for triple in Self.triples(open) where !unexplained(triple.map(\.centre)).isEmpty {
            if passes.areaModuleSize > 0 {
                _ = try scanUpright(triple, in: gray, scale: (1, 1), frame: gray)
                continue
            }
            try scanArea(Self.codeArea(triple), of: gray, scale: (1, 1), frame: gray, finders: triple)
        }
        return unexplained(open.map(\.centre))
    }

    /// Scans `box` (in `source`'s pixels; `scale` maps them to the frame's), plain, then, when a
    /// finder there is light-centred (a light-on-dark code), inverted. Skipped when the box is
    /// tiny, or so large that scanning it saves nothing.
    mutating func scanArea(
        _ box: CGRect, of source: PixelBuffer, scale: (Double, Double), frame: PixelBuffer,
        finders: [FinderEvidence.Finder]
    ) throws(CaptureError) {
        let clipped = box.intersection(CGRect(x: 0, y: 0, width: source.width, height: source.height))
        guard !clipped.isNull else { return }
        let x0 = Int(clipped.minX), y0 = Int(clipped.minY)
        let region = PixelRect(
            x: x0, y: y0, width: min(source.width, Int(clipped.maxX.rounded(.up))) - x0,
            height: min(source.height, Int(clipped.maxY.rounded(.up))) - y0)
        // ZBar's cost follows the pixels scanned; the half-size scan takes a quarter of the
        // frame's. Regions near that size save nothing.
        guard region.width >= 16, region.height >= 16,
            region.width * region.height < frame.width * frame.height * 3 / 16
        else { return }
        let mapping = Homography.scaling(
            scale.0, scale.1, offsetX: Double(region.x) * scale.0, offsetY: Double(region.y) * scale.1)
        let crop = try CodeImaging.crop(source, region)
        if try attempt(crop, mapping) { return }
        if passes.inverted && finders.contains(where: { !$0.dark }) {
            _ = try attempt(try CodeImaging.inverted(crop), mapping)
        }
    }

    /// Warps the area of a finder triple (in `source`'s pixels; `scale` maps them to the frame's)
    /// onto an upright image with `Passes.areaModuleSize`-pixel modules and scans it, plain, then
    /// inverted when a finder is light-centred. The map is affine, fixed by the three finder
    /// centres (the fourth corner completes the parallelogram; ZBar's own sampling grid absorbs
    /// moderate perspective). True when it read a new symbol; false too when the triple has no
    /// right-angle corner or the upright image would hold 3/4 of the half-size scan's pixels or more
    /// (unless `overBudget`; such a triple of modules under 3 frame pixels is kept in `largeTriples`).
    mutating func scanUpright(
        _ t: [FinderEvidence.Finder], in source: PixelBuffer, scale: (Double, Double), frame: PixelBuffer,
        overBudget: Bool = false
    ) throws(CaptureError) -> Bool {
        guard let k = Self.corner(of: t) else { return false }
        let o = t[k].centre
        var u = t[(k + 1) % 3].centre, v = t[(k + 2) % 3].centre
        // Top-right, then bottom-left: in a y-down frame the cross product of o→u and o→v is positive.
        if (u.x - o.x) * (v.y - o.y) - (u.y - o.y) * (v.x - o.x) < 0 { swap(&u, &v) }
        let module = t.map(\.module).reduce(0, +) / 3
        let size = passes.areaModuleSize
        let du = ((u.x - o.x) * (u.x - o.x) + (u.y - o.y) * (u.y - o.y)).squareRoot() / module * size
        let dv = ((v.x - o.x) * (v.x - o.x) + (v.y - o.y) * (v.y - o.y)).squareRoot() / module * size
        // A finder's centre lies 3.5 modules inside the code; 5.5 modules of quiet zone beyond.
        let c = 9 * size
        let w = Int((du + 2 * c).rounded(.up)), h = Int((dv + 2 * c).rounded(.up))
        // A large upright image saves little over the half-size scan, which reads modules of
        // 3 frame pixels and more; smaller ones (a high-version code filling a 640x480 frame)
        // only a read around their finders can reach: that read waits until every whole-frame
        // pass has failed (`readLargeTriples`), as zxing-cpp's reads most of them for less.
        guard w >= 16, h >= 16 else { return false }
        if !overBudget && w * h >= frame.width * frame.height * 3 / 16 {
            if module * scale.0 < 3 { largeTriples.append((t, source, scale)) }
            return false
        }
        let (upright, back) = try Self.warped(
            source, from: [o, u, v, CGPoint(x: u.x + v.x - o.x, y: u.y + v.y - o.y)],
            to: [CGPoint(x: c, y: c), CGPoint(x: c + du, y: c), CGPoint(x: c, y: c + dv), CGPoint(x: c + du, y: c + dv)],
            width: w, height: h, toFrame: { CGPoint(x: $0.x * scale.0, y: $0.y * scale.1) })
        if try attempt(upright, back, rectified: true, upright: true) { return true }
        if passes.inverted && t.contains(where: { !$0.dark }),
            try attempt(try CodeImaging.inverted(upright), back, rectified: true, upright: true)
        {
            return true
        }
        // Seen at a steep angle the code is no parallelogram: rectified from its finders' outlines.
        if passes.locate, passes.perspective, try scanPerspective(t, corner: k, u: u, v: v, in: source, scale: scale) {
            return true
        }
        // A faint code in a bright surround: binarised at its finders' own level.
        guard passes.codeLevel else { return false }
        return try readAtCodeLevel(
            upright, finders: [CGPoint(x: c, y: c), CGPoint(x: c + du, y: c), CGPoint(x: c, y: c + dv)], module: size,
            back: back, lightCentred: t.contains { !$0.dark })
    }

    /// Of `points` (frame pixels), those outside every code read so far (its box plus a cell).
    func unexplained(_ points: [CGPoint]) -> [CGPoint] {
        let margin = Double(Self.cell)
        let boxes = found.map { DeviceSpace.boundingBox(of: $0.points).insetBy(dx: -margin, dy: -margin) }
        return points.filter { p in !boxes.contains { $0.contains(p) } }
    }

    /// How much larger one finder's modules may be than another's in one triple (`triples`). A
    /// code tilted 30–50° toward the camera is a trapezoid whose near finder measures up to about
    /// 1.6 times the far ones; at 1.5 such a triple was never formed and no pass read the code
    /// (`QRPerspectiveTests`). Code-free frames run no more scans for it (`Tools/Bench/README.md`).
    static let tripleModuleRatio = 1.75

    /// Triples of finders that can be one code's three: at the corners of a right angle with
    /// two about equal sides 14–170 modules long (versions 1–40), modules within
    /// `tripleModuleRatio` of each other.
    static func triples(_ finders: [FinderEvidence.Finder]) -> [[FinderEvidence.Finder]] {
        var out: [[FinderEvidence.Finder]] = []
        for a in finders.indices {
            for b in finders.indices where b > a {
                for c in finders.indices where c > b {
                    let t = [finders[a], finders[b], finders[c]]
                    // Modules compared on the longer of the row and column measures: a steep
                    // view foreshortens one of them, by more on the far finders.
                    let modules = t.map { max($0.module, $0.columnModule ?? $0.module) }
                    guard modules.max()! < Self.tripleModuleRatio * modules.min()! else { continue }
                    if corner(of: t) != nil { out.append(t) }
                }
            }
        }
        return out
    }

    /// Which of three finders sits at the right angle (see `triples`), if any. A code seen at a
    /// steep angle is squeezed along one axis, and its finders with it: when their row and column
    /// measures differ by more than 15 %, the test is repeated with that squeeze undone (rows
    /// scaled by column/row), which restores the right angle and the equal sides of a code
    /// tilted about a vertical or horizontal line; square finders (no squeeze) see no change.
    static func corner(of t: [FinderEvidence.Finder]) -> Int? {
        if let k = corner(of: t, stretch: 1) { return k }
        let ratios = t.compactMap { f in f.columnModule.map { f.module / $0 } }
        guard ratios.count == 3 else { return nil }
        let stretch = ratios.reduce(0, +) / 3
        guard stretch < 1 / 1.15 || stretch > 1.15 else { return nil }
        return corner(of: t, stretch: stretch)
    }

    /// `corner(of:)` with the finders' x offsets divided by `stretch` (row over column module).
    static func corner(of t: [FinderEvidence.Finder], stretch: Double) -> Int? {
        let module = t.map { stretch == 1 ? $0.module : $0.columnModule ?? $0.module }.reduce(0, +) / 3
        for k in 0..<3 {
            let o = t[k].centre, u = t[(k + 1) % 3].centre, v = t[(k + 2) % 3].centre
            let ux = (u.x - o.x) / stretch, uy = u.y - o.y, vx = (v.x - o.x) / stretch, vy = v.y - o.y
            let lu = (ux * ux + uy * uy).squareRoot(), lv = (vx * vx + vy * vy).squareRoot()
            guard min(lu, lv) > 14 * module * 0.8, max(lu, lv) < 170 * module * 1.5,
                max(lu, lv) < 1.5 * min(lu, lv), abs(ux * vx + uy * vy) < 0.35 * lu * lv
            else { continue }
            return k
        }
        return nil
    }

    /// Where the code with these three finders lies: their centres and the fourth corner, plus
    /// 9 modules (a finder's centre is 3.5 modules inside the code, then the quiet zone).
    static func codeArea(_ t: [FinderEvidence.Finder]) -> CGRect {
        var points = t.map(\.centre)
        if let k = corner(of: t) {
            let o = t[k].centre, u = t[(k + 1) % 3].centre, v = t[(k + 2) % 3].centre
            points.append(CGPoint(x: u.x + v.x - o.x, y: u.y + v.y - o.y))
        }
        let margin = 9 * (t.map(\.module).max() ?? 1)
        let xs = points.map(\.x), ys = points.map(\.y)
        return CGRect(
            x: xs.min()! - margin, y: ys.min()! - margin,
            width: xs.max()! - xs.min()! + 2 * margin, height: ys.max()! - ys.min()! + 2 * margin)
    }

    /// The passes on one region, stopping at the first that reads something.
    mutating func rescue(_ crop: PixelBuffer, offset: Homography) throws(CaptureError) {
        if try attempt(crop, offset) { return }
        if passes.inverted, try attempt(try CodeImaging.inverted(crop), offset) { return }
        if passes.locate && types.contains(.qr) {
            var any = false
            counts.localisations += 1
            for quad in try CodeImaging.locateQRCodes(crop, multiple: passes.locateMultiple) {
                any = try rectify(crop, quad: quad, offset: offset) || any
            }
            if any { return }
        }
        if passes.binarize {
            if try attempt(try CodeImaging.sharpened(crop, sigma: 2, amount: 1.5), offset) { return }
        }
    }

    /// Warps the quadrilateral OpenCV found onto an upright square with a quiet-zone margin and
    /// scans it plain, Otsu-binarised and inverted.
    mutating func rectify(_ crop: PixelBuffer, quad: [CGPoint], offset: Homography) throws(CaptureError) -> Bool {
        let side = 300.0, margin = 40.0
        let square = [
            CGPoint(x: margin, y: margin), CGPoint(x: margin + side, y: margin),
            CGPoint(x: margin + side, y: margin + side), CGPoint(x: margin, y: margin + side),
        ]
        let (out, back) = try Self.warped(
            crop, from: quad, to: square, width: Int(side + 2 * margin), height: Int(side + 2 * margin),
            toFrame: offset.apply)
        if try attempt(out, back, rectified: true) { return true }
        if passes.binarize,
            try attempt(try CodeImaging.thresholded(out, kind: Int32(CVB_THRESHOLD_OTSU)), back)
        {
            return true
        }
        if passes.inverted, try attempt(try CodeImaging.inverted(out), back, rectified: true) { return true }
        return false
    }

    /// `source` warped so that the points `from` (its pixels) land on `to`, into a new gray
    /// `width` × `height` image (`CodeImaging.warp`: linear, edges replicated), and the map from
    /// that image's pixels back to the frame's (`toFrame` maps `source`'s pixels there).
    static func warped(
        _ source: PixelBuffer, from: [CGPoint], to: [CGPoint], width: Int, height: Int,
        toFrame: (CGPoint) -> CGPoint
    ) throws(CaptureError) -> (image: PixelBuffer, back: Homography) {
        let forward = try CodeImaging.homography(from: from, to: to)
        let back = try CodeImaging.homography(from: to, to: from.map(toFrame))
        let image = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
        try CodeImaging.warp(
            source, into: image, homography: forward, interpolation: Int32(CVB_INTER_LINEAR),
            border: Int32(CVB_BORDER_REPLICATE))
        return (image, back)
    }

    /// One ZBar scan, counted (scans and pixels).
    mutating func zbarScan(_ image: PixelBuffer, with other: ZBarScanner? = nil) throws(CaptureError) -> [ScannedSymbol] {
        counts.zbarScans += 1
        counts.zbarPixels += image.width * image.height
        let scanner = other ?? scanner
        return try scanner.scan(image)
    }

    /// Scans `image`; true when it read a new symbol. `rectified`: the image is a code's area
    /// warped upright, which zxing-cpp reads too when ZBar read nothing there; `upright`: it is a
    /// finder triple's area at `Passes.areaModuleSize`, which `uprightScanner` scans.
    mutating func attempt(
        _ image: PixelBuffer, _ mapping: Homography, rectified: Bool = false, upright: Bool = false
    ) throws(CaptureError) -> Bool {
        let before = found.count
        add(try zbarScan(image, with: upright ? uprightScanner : nil), mapping: mapping)
        if found.count == before, rectified, zxingTypes.contains(.qr) {
            var hints = ZXingHints.defaults([.qr])
            hints.tryRotate = false
            hints.tryDownscale = false
            return try zxingRead(image, mapping: mapping, hints: hints)
        }
        return found.count > before
    }

    /// Regions of code-like detail: connected groups of grid cells whose gradient energy is
    /// high, padded by one cell, largest first.
    func candidateRegions(_ gray: PixelBuffer) throws(CaptureError) -> [PixelRect] {
        let cols = max(1, gray.width / Self.cell), rows = max(1, gray.height / Self.cell)
        var cells = [Float](repeating: 0, count: cols * rows)
        var err = cvb_error()
        let status = gray.withBridgeImage { image in cvb_image_detail_grid(&image, Int32(cols), Int32(rows), &cells, &err) }
        try CodeImaging.check(status, err, "measuring image detail")
        var label = [Int](repeating: -1, count: cols * rows)
        var boxes: [(x0: Int, y0: Int, x1: Int, y1: Int, n: Int)] = []
        for start in 0..<cells.count where cells[start] >= passes.detailThreshold && label[start] < 0 {
            var stack = [start]
            label[start] = boxes.count
            var box = (x0: start % cols, y0: start / cols, x1: start % cols, y1: start / cols, n: 0)
            while let i = stack.popLast() {
                let x = i % cols, y = i / cols
                box = (min(box.x0, x), min(box.y0, y), max(box.x1, x), max(box.y1, y), box.n + 1)
                for dy in -1...1 {
                    for dx in -1...1 {
                        let nx = x + dx, ny = y + dy
                        guard nx >= 0, ny >= 0, nx < cols, ny < rows else { continue }
                        let j = ny * cols + nx
                        if label[j] < 0 && cells[j] >= passes.detailThreshold {
                            label[j] = boxes.count
                            stack.append(j)
                        }
                    }
                }
            }
            boxes.append(box)
        }
        // One region, the union of the groups: scanning several overlapping pieces of a busy
        // photo cost more than scanning their hull once (measured: 71 ms vs 44 ms per no-code
        // 640x480 photo with every pass).
        let groups = boxes.filter { $0.n >= 3 }
        guard let first = groups.first else { return [] }
        let b = groups.dropFirst().reduce(first) { u, g in (min(u.x0, g.x0), min(u.y0, g.y0), max(u.x1, g.x1), max(u.y1, g.y1), u.n + g.n) }
        let cw = Double(gray.width) / Double(cols), ch = Double(gray.height) / Double(rows)
        let x0 = max(0, Int(Double(b.x0 - 1) * cw)), y0 = max(0, Int(Double(b.y0 - 1) * ch))
        let x1 = min(gray.width, Int(Double(b.x1 + 2) * cw)), y1 = min(gray.height, Int(Double(b.y1 + 2) * ch))
        return [PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)]
    }

    /// Adds symbols not already found, mapping their points back into the frame's pixels.
    mutating func add(_ symbols: [ScannedSymbol], mapping: Homography?) {
        for var symbol in symbols {
            symbol = CodeConventions.normalised(symbol, requested: requested)
            if let mapping { symbol.points = symbol.points.map(mapping.apply) }
            if !found.contains(where: { $0.isSameCode(as: symbol) }) { found.append(symbol) }
        }
    }
}

/// What `FinderEvidence` saw in one frame, each look taken at most once: the half-size frame,
/// the full-size local mean, the finders at half, full and quarter size and in the gate's last
/// look, and the `SymbolCues` of `cueKinds` those looks noted on the same rows (in full-size
/// pixels). Value type, one per frame.
struct FrameLooks {
    /// The cues each look collects (the 2-D types besides QR the detector reads, when gated).
    var cueKinds: SymbolCues.Kinds = []
    var half: PixelBuffer?
    /// The half-size frame halved again, once its look was taken (`ScanRun.quarterSizeFinders`).
    var quarter: PixelBuffer?
    /// Full-size pixels per half-size pixel.
    var halfScale = 2.0
    var fullMean: PixelBuffer?
    var halfMean: PixelBuffer?
    var halfFinders: [FinderEvidence.Finder]?
    var fullFinders: [FinderEvidence.Finder]?
    var quarterFinders: [FinderEvidence.Finder]?
    var gateFinders: [FinderEvidence.Finder]?
    var cues = SymbolCues()
    /// The Aztec cores read around the cues' bullseyes (`ScanRun.cuesSeen`), once computed.
    var aztecCores: [(FinderEvidence.Finder, AztecCore.Symbol)]?
    /// The frame reduced by a factor (the key) and thresholded for reading Aztec cores
    /// (`ScanRun.aztecBinary`), once per factor.
    var aztecBinaries: [Int: PixelBuffer] = [:]
}
