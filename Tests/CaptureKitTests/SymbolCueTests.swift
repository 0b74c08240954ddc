import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// The type gate of Data Matrix, Aztec and PDF417 (`SymbolCues`, `Passes.typeGate`) on camera-sized
/// frames, and the reads that start from a cue; plus stills cropped to the symbol, which have no
/// quiet zone. Generated symbols only (Tests/Fixtures/codes, Tests/Fixtures/barcodes).
@Suite struct SymbolCueTests {
    static func fixture(_ path: String) throws -> PixelBuffer {
        try CodeImaging.gray(try QRTestCorpus.photo(at: Fixtures.packageRoot.appendingPathComponent(path).path))
    }

    /// The box of `gray`'s dark pixels (the fixtures' frames are light).
    static func darkBox(_ gray: PixelBuffer) -> PixelRect {
        var x0 = gray.width, y0 = gray.height, x1 = 0, y1 = 0
        let p = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<gray.height {
            for x in 0..<gray.width where p[y * gray.bytesPerRow + x] < 128 {
                x0 = min(x0, x)
                y0 = min(y0, y)
                x1 = max(x1, x + 1)
                y1 = max(y1, y + 1)
            }
        }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The fixture symbol (4 px modules) with 2 modules of its quiet zone, scaled to `module` px,
    /// turned by `angle`° about its centre and placed at `centre` on a 640×480 clutter frame;
    /// `faint`: printed with its modules 100 and 138, on a frame with sensor noise (σ 3).
    static func placed(
        _ path: String, module: Double, angle: Double, centre: CGPoint, seed: UInt64, faint: Bool = false
    ) throws -> PixelBuffer {
        let printed = try fixture(path)
        let source = faint ? try CodeImaging.scaled(printed, alpha: 0.15, beta: 100) : printed
        let box = darkBox(printed)
        let pad = 8.0
        let (from, to) = Placement.turned(
            CGRect(x: Double(box.x) - pad, y: Double(box.y) - pad, width: Double(box.width) + 2 * pad, height: Double(box.height) + 2 * pad),
            scale: module / 4, degrees: angle, centre: centre)
        let frame = try CodeImaging.gray(try QRTestCorpus.background(width: 640, height: 480, seed: seed))
        try CodeImaging.warp(source, into: frame, homography: try CodeImaging.homography(from: from, to: to))
        if faint { try CodeImaging.addNoise(frame, seed: seed, standardDeviation: 3) }
        return frame
    }

    /// zxing-cpp 1.4 on the whole frame and on its double: the reads the gate opens before any
    /// read that starts from a cue.
    static func zxingWholeAndDouble(_ gray: PixelBuffer, _ type: MetadataObjectType) throws -> [ScannedSymbol] {
        let double = try CodeImaging.resized(gray, width: gray.width * 2, height: gray.height * 2, interpolation: Interpolation.linear)
        return try ZXingReader().read(gray, hints: .defaults([type])) + ZXingReader().read(double, hints: .defaults([type]))
    }

    @Test func aRunePrintedWithoutAQuietZoneIsRead() throws {
        // Rune 223 cut to its 11×11 modules: the second dark ring of the bullseye runs into the
        // mode message's dark modules and on to the image's edge.
        let source = try Self.fixture("Tests/Fixtures/barcodes/aztec-rune-223.png")
        let box = Self.darkBox(source)
        let tight = try CodeImaging.crop(source, PixelRect(x: box.x, y: box.y, width: 44, height: 44))
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: tight)
        #expect(codes.map(\.stringValue) == ["223"])
    }

    @Test func aDataMatrixCroppedToItsEdgeIsRead() throws {
        let source = try Self.fixture("Tests/Fixtures/codes/datamatrix.png")
        let tight = try CodeImaging.crop(source, Self.darkBox(source))
        #expect(try Self.zxingWholeAndDouble(tight, .dataMatrix).isEmpty, "zxing-cpp 1.4 needs a quiet zone")
        let codes = try CodeDetector(metadataObjectTypes: [.dataMatrix]).detections(in: tight)
        #expect(codes.map(\.stringValue) == ["cvcam Data Matrix 1"])
        // Corners inside the crop, not shifted by the margin.
        #expect(codes.first.map { c in c.corners.allSatisfy { $0.x >= -0.02 && $0.y >= -0.02 } } ?? false)
    }

    /// Data Matrix symbols away from the middle of a cluttered camera frame, 2 px per module,
    /// upright, turned 5° and upside down: zxing-cpp 1.4 searches outward from the middle.
    static let offCentre = [CGPoint(x: 140, y: 120), CGPoint(x: 500, y: 120), CGPoint(x: 140, y: 360), CGPoint(x: 500, y: 360)]

    @Test(arguments: [0.0, 5, 180]) func aDataMatrixAwayFromTheMiddleIsReadAroundItsTimingEdge(angle: Double) throws {
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        var missedAlone = 0
        for (i, centre) in Self.offCentre.enumerated() {
            let frame = try Self.placed(
                "Tests/Fixtures/codes/datamatrix.png", module: 2, angle: angle, centre: centre, seed: 7 + UInt64(i))
            if try Self.zxingWholeAndDouble(frame, .dataMatrix).isEmpty { missedAlone += 1 }
            let codes = try detector.detections(in: frame)
            #expect(codes.map(\.stringValue) == ["cvcam Data Matrix 1"], "at \(centre), \(angle)°")
        }
        #expect(missedAlone > 0, "zxing-cpp 1.4 alone reads every placement: the test shows nothing")
    }

    @Test func aFaintDataMatrixIsReadByTheLocatorAroundItsTimingEdge() throws {
        // zxing-cpp 1.4 reads none of these, whole or in the crop around the edge; the locator
        // in that crop, thresholded between the edge's own light and dark modules, does.
        var withoutLocator = CodeDetector.Passes()
        withoutLocator.dataMatrixLocator = false
        let plain = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes, passes: withoutLocator)
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        for (i, centre) in Self.offCentre.enumerated() {
            for module in [3.0, 4.5] {
                let frame = try Self.placed(
                    "Tests/Fixtures/codes/datamatrix.png", module: module, angle: 0, centre: centre, seed: 11 + UInt64(i), faint: true)
                #expect(try plain.detections(in: frame).isEmpty, "at \(centre), \(module) px: read without the locator")
                #expect(
                    try detector.detections(in: frame).map(\.stringValue) == ["cvcam Data Matrix 1"], "at \(centre), \(module) px")
            }
        }
    }

    @Test func aRectangularDataMatrixStandingOnItsShortSideIsRead() throws {
        // The fixture is a rectangular symbol; turned 90° the timing edge a row crosses is its
        // short side, and the symbol reaches further beyond it than the square crop does.
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        for (i, centre) in Self.offCentre.enumerated() {
            let frame = try Self.placed(
                "Tests/Fixtures/codes/datamatrix.png", module: 4.5, angle: 90, centre: centre, seed: 21 + UInt64(i))
            let cuesBefore = detector.passCounts.dataMatrixCues
            #expect(try detector.detections(in: frame).map(\.stringValue) == ["cvcam Data Matrix 1"], "at \(centre)")
            #expect(detector.passCounts.dataMatrixCues == cuesBefore + 1, "no cue at \(centre): the test shows nothing")
        }
    }

    /// The fixture symbols of the 2-D types with a cue: path, type, text.
    static let cuedFixtures: [(String, MetadataObjectType, String)] = [
        ("Tests/Fixtures/codes/datamatrix.png", .dataMatrix, "cvcam Data Matrix 1"),
        ("Tests/Fixtures/codes/aztec.png", .aztec, "cvcam Aztec 1"),
        ("Tests/Fixtures/codes/pdf417.png", .pdf417, "cvcam PDF417 1"),
    ]

    @Test(arguments: cuedFixtures)
    func eachTypeOpensItsGateInACameraFrame(_ path: String, _ type: MetadataObjectType, _ text: String) throws {
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        for angle in [0.0, 5] {
            let frame = try Self.placed(path, module: 3, angle: angle, centre: CGPoint(x: 330, y: 230), seed: 3)
            let codes = try detector.detections(in: frame)
            #expect(codes.contains { $0.type == type && $0.stringValue == text }, "\(type) at \(angle)°")
        }
    }

    /// An Aztec symbol seen in perspective, its near side up to 1.6 times its far one: the
    /// bullseye's rings are crossed wider on one side of its centre than on the other, and the
    /// cue still opens the read (`SymbolCues.ringsMirrored` allows 5:3 between the two).
    @Test(arguments: [1.0, 1.3, 1.55])
    func anAztecSymbolInPerspectiveOpensItsRead(_ near: Double) throws {
        let printed = try Self.fixture("Tests/Fixtures/codes/aztec.png")
        let box = Self.darkBox(printed)
        let r = CGRect(x: Double(box.x) - 8, y: Double(box.y) - 8, width: Double(box.width) + 16, height: Double(box.height) + 16)
        // 3 px per module at the far (left) side; the right side `near` times as tall.
        let side = r.width * 3 / 4, far = r.height * 3 / 4
        let to = [
            CGPoint(x: 320 - side / 2, y: 240 - far / 2), CGPoint(x: 320 + side / 2, y: 240 - near * far / 2),
            CGPoint(x: 320 + side / 2, y: 240 + near * far / 2), CGPoint(x: 320 - side / 2, y: 240 + far / 2),
        ]
        let from = [CGPoint(x: r.minX, y: r.minY), CGPoint(x: r.maxX, y: r.minY), CGPoint(x: r.maxX, y: r.maxY), CGPoint(x: r.minX, y: r.maxY)]
        let frame = try CodeImaging.gray(try QRTestCorpus.background(width: 640, height: 480, seed: 8))
        try CodeImaging.warp(printed, into: frame, homography: try CodeImaging.homography(from: from, to: to))
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        let codes = try detector.detections(in: frame)
        #expect(detector.passCounts.aztecCues == 1, "near side \(near)x")
        #expect(codes.contains { $0.type == .aztec && $0.stringValue == "cvcam Aztec 1" }, "near side \(near)x")
    }

    /// A faint PDF417 of 2-px modules turned 5° in a camera frame: its cue opens the read, and
    /// zxing-cpp 1.4 reads it only in the area around its start and stop patterns at twice the
    /// size, sharpened (`ScanRun.readPDF417AroundPatterns`); in the frame its modules merge.
    @Test func aFaintSmallPDF417IsReadAroundItsPatterns() throws {
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        let frame = try Self.placed(
            "Tests/Fixtures/codes/pdf417.png", module: 2, angle: 5, centre: CGPoint(x: 400, y: 250), seed: 5, faint: true)
        let gray = try CodeImaging.gray(frame)
        #expect(try ZXingReader().read(gray, hints: .defaults([.pdf417])).isEmpty)
        let codes = try detector.detections(in: frame)
        #expect(detector.passCounts.pdf417Cues == 1)
        #expect(codes.contains { $0.type == .pdf417 && $0.stringValue == "cvcam PDF417 1" })
    }

    /// A PDF417 symbol standing on its end (turned 90° and 270°) in a camera frame, 2 and 3 px
    /// per module: no row crosses its start or stop pattern, and the columns down the long dark
    /// runs of its widest bars (`SymbolCues.walkStanding`) open the read.
    @Test(arguments: [90.0, 270])
    func aPDF417StandingOnItsEndOpensItsRead(angle: Double) throws {
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        for (i, module) in [2.0, 3].enumerated() {
            let frame = try Self.placed(
                "Tests/Fixtures/codes/pdf417.png", module: module, angle: angle, centre: CGPoint(x: 300 + 40 * Double(i), y: 240),
                seed: 31 + UInt64(i))
            let before = detector.passCounts.pdf417Cues
            let codes = try detector.detections(in: frame)
            #expect(detector.passCounts.pdf417Cues == before + 1, "\(module) px, \(angle)°: no cue")
            #expect(codes.contains { $0.type == .pdf417 && $0.stringValue == "cvcam PDF417 1" }, "\(module) px, \(angle)°")
        }
    }

    /// A faint PDF417 symbol of 2.5 and 3-px modules standing on its end: zxing-cpp 1.4 reads
    /// nothing in the frame. The gate look's threshold (15 levels under the local mean) breaks
    /// its bars, and the full-size look walks its columns too; its crop reaches along the
    /// columns as far as the symbol may (160 px each way cut it off). Most faint standing
    /// symbols still show no cue (`Tools/Bench/README.md`, eighteenth round).
    @Test(arguments: [3.0, 2.5])
    func aFaintPDF417StandingOnItsEndIsReadAlongItsColumns(module: Double) throws {
        let frame = try CodeImaging.gray(
            try Self.placed("Tests/Fixtures/codes/pdf417.png", module: module, angle: 270, centre: CGPoint(x: 370, y: 244), seed: 77, faint: true))
        #expect(try ZXingReader().read(frame, hints: .defaults([.pdf417])).isEmpty)
        var cued = ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: CodeDetector.Passes(), types: [.pdf417])
        cued.looks.cueKinds = [.pdf417]
        _ = try cued.cuesSeen(frame)
        let cues = cued.looks.cues
        #expect(!cues.standingPDF417.isEmpty && cues.standingPDF417 == cues.pdf417)
        func readAround(standing: Bool) throws -> [String] {
            var run = ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: CodeDetector.Passes(), types: [.pdf417])
            run.looks.cues.pdf417 = cues.pdf417
            run.looks.cues.standingPDF417 = standing ? cues.standingPDF417 : []
            try run.readPDF417AroundPatterns(frame)
            return run.found.compactMap(\.text)
        }
        #expect(try readAround(standing: false).isEmpty)
        #expect(try readAround(standing: true) == ["cvcam PDF417 1"])
        let codes = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes).detections(in: frame)
        #expect(codes.map(\.stringValue) == ["cvcam PDF417 1"])
    }

    /// `SymbolCues.standingPattern`: down a column, the start pattern's widths (8:1:1:1:1:1:1:3
    /// modules) or the stop pattern's (7:1:1:3:1:1:1:2:1, either way round) around the bar the
    /// row crossed; the pattern's runs out of proportion, or a dark bar alone, are none.
    @Test func aStandingPatternIsReadDownItsColumn() throws {
        func column(_ runs: [Int], module: Int) throws -> (PixelBuffer, barRow: Int) {
            let height = 40 + runs.reduce(0, +) * module + 40
            let image = try PixelBuffer(width: 4, height: height, pixelFormat: .gray)
            let p = image.baseAddress.assumingMemoryBound(to: UInt8.self)
            memset(p, 255, image.bytesPerRow * height)
            var y = 40, dark = true, barRow = 0
            for r in runs {
                for yy in y..<(y + r * module) where dark { memset(p + yy * image.bytesPerRow, 0, 4) }
                if r == runs.max() { barRow = y + r * module / 2 }
                y += r * module
                dark.toggle()
            }
            return (image, barRow)
        }
        // The start pattern followed by a codeword's first bar (its 3-module space ends there).
        for (runs, expected) in [([8, 1, 1, 1, 1, 1, 1, 3, 2], 0), ([7, 1, 1, 3, 1, 1, 1, 2, 1], 2), ([1, 2, 1, 1, 1, 3, 1, 1, 7], 3)] {
            let (image, row) = try column(runs, module: 2)
            let bar = withExtendedLifetime(image) { SymbolCues.standingPattern(Thresholded(image), x: 1, y: row) }
            #expect(bar?.pattern == expected, "\(runs)")
        }
        // The same bar with its neighbours twice as wide, and a dark bar alone.
        for runs in [[8, 2, 2, 2, 2, 2, 2, 3, 2], [8]] {
            let (image, row) = try column(runs, module: 2)
            #expect(withExtendedLifetime(image) { SymbolCues.standingPattern(Thresholded(image), x: 1, y: row) } == nil, "\(runs)")
        }
    }

    /// `SymbolCues.ringsMirrored`: within 2 px (blur at 2-px modules) or 5:3; a one-module run
    /// against a two-module one from 3 px per module is not.
    @Test func ringsCrossedOnBothSidesAreMirrored() {
        #expect(SymbolCues.ringsMirrored(3, 3) && SymbolCues.ringsMirrored(1, 3) && SymbolCues.ringsMirrored(4, 2))
        #expect(SymbolCues.ringsMirrored(10, 6) && SymbolCues.ringsMirrored(6, 10))
        #expect(!SymbolCues.ringsMirrored(3, 6) && !SymbolCues.ringsMirrored(8, 4) && !SymbolCues.ringsMirrored(5, 10))
    }

    @Test func codeFreePhotosRarelyOpenTheGate() throws {
        // Every face fixture photo at two camera sizes: an open gate costs a zxing-cpp read of
        // the whole frame, so texture must rarely pass for a symbol.
        let paths = try Fixtures.facePhotoPaths()
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        var frames = 0, opened = 0, aztec = 0
        for path in paths {
            for (w, h) in [(640, 480), (1280, 720)] {
                let before = detector.passCounts
                let codes = try detector.detections(in: try QRTestCorpus.photo(at: path, width: w, height: h))
                let after = detector.passCounts
                #expect(codes.isEmpty, "\(path)")
                frames += 1
                let cues = (after.aztecCues - before.aztecCues) + (after.pdf417Cues - before.pdf417Cues)
                    + (after.dataMatrixCues - before.dataMatrixCues)
                if cues > 0 { opened += 1 }
                aztec += after.aztecCues - before.aztecCues
            }
        }
        #expect(frames >= 20)
        // Seven rings that pass the core's Reed–Solomon check do not happen by chance.
        #expect(aztec == 0)
        #expect(opened * 5 <= frames, "\(opened) of \(frames) code-free frames opened a read")
    }
}
