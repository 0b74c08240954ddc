import CVBridge
import Foundation
import Testing

@_spi(Benchmark) @testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// The package root, found from this file.
private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Exact payloads found among `expected` (each matched at most once).
private func hits(_ expected: [[UInt8]], _ found: [[UInt8]]) -> Int {
    var pool = found
    return expected.reduce(0) { n, e in
        guard let i = pool.firstIndex(of: e) else { return n }
        pool.remove(at: i)
        return n + 1
    }
}

/// Exact payloads detectors `a` and `b` each read in `count` corpus samples (seeded) of every
/// category, and how many codes the samples hold; `each` sees every sample first.
private func decodes(
    _ a: CodeDetector, _ b: CodeDetector, in categories: [QRTestCorpus.Category], count: Int, seed: UInt64,
    each: (QRTestCorpus.Sample) throws -> Void = { _ in }
) throws -> (a: Int, b: Int, total: Int) {
    var result = (a: 0, b: 0, total: 0)
    for category in categories {
        for s in try QRTestCorpus.samples(category, count: count, seed: seed) {
            try each(s)
            result.total += s.codes.count
            result.a += hits(s.expectedPayloads, try a.detect(in: s.image).map(\.payload))
            result.b += hits(s.expectedPayloads, try b.detect(in: s.image).map(\.payload))
        }
    }
    return result
}

/// A light-grey BGR frame with `symbol` drawn at (x, y).
private func frame(width: Int, height: Int, codes: [(PixelBuffer, Int, Int)]) throws -> PixelBuffer {
    let f = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
    var err = cvb_error()
    #expect(f.withBridgeImage { cvb_image_fill(&$0, 200, 200, 200, &err) } == 0)
    for (symbol, x, y) in codes {
        let status = PixelBuffer.withBridgeImages(f, symbol) { dst, src in
            cvb_image_blit(&dst, &src, Int32(x), Int32(y), Int32(symbol.width), Int32(symbol.height), Int32(CVB_INTER_LINEAR), &err)
        }
        #expect(status == 0)
    }
    return f
}

@Suite struct CodeDetectorTests {
    @Test func invertedCodesAreReadWherePlainZBarReadsNone() throws {
        let (c, z, total) = try decodes(
            try CodeDetector(), try CodeDetector(passes: .zbarOnly), in: [.inverted], count: 6, seed: 11)
        #expect(total == 6)
        #expect(c == total)
        #expect(z == 0)
    }

    @Test func blurredAndPerspectiveCodesBeatPlainZBar() throws {
        let (c, z, _) = try decodes(
            try CodeDetector(), try CodeDetector(passes: .zbarOnly), in: [.blurred, .perspective], count: 8, seed: 5)
        #expect(c > z, "cvcam \(c) vs ZBar \(z) of 16")
    }

    @Test func everyCodeInAFrameIsFound() throws {
        let detector = try CodeDetector()
        for s in try QRTestCorpus.samples(.multiple, count: 4, seed: 3) {
            let found = try detector.detect(in: s.image)
            #expect(s.codes.count >= 2)
            #expect(hits(s.expectedPayloads, found.map(\.payload)) == s.codes.count, "\(s.name)")
            #expect(found.count == s.codes.count, "\(s.name): no duplicates")
        }
    }

    @Test func anInvertedCodeBesideANormalOneIsFound() throws {
        // The demo clip's case: a dark-on-light and a light-on-dark code side by side.
        let normal = try QRCodeImage.make(payload: Array("NORMAL-1".utf8), moduleSize: 6)
        let code = try QRCodeImage.make(payload: Array("INVERTED-2".utf8), moduleSize: 6)
        let frame = try PixelBuffer(width: 1280, height: 720, pixelFormat: .gray)
        for y in 0..<720 { for x in 0..<1280 { (frame.baseAddress + y * frame.bytesPerRow + x).storeBytes(of: 120, as: UInt8.self) } }
        for y in 0..<normal.height {
            for x in 0..<normal.width {
                (frame.baseAddress + (200 + y) * frame.bytesPerRow + 300 + x).storeBytes(of: normal.pixel(x: x, y: y)[0], as: UInt8.self)
            }
        }
        for y in 0..<code.height {
            for x in 0..<code.width {
                (frame.baseAddress + (200 + y) * frame.bytesPerRow + 700 + x).storeBytes(of: 255 - code.pixel(x: x, y: y)[0], as: UInt8.self)
            }
        }
        let found = try CodeDetector().detect(in: frame)
        #expect(Set(found.compactMap(\.stringValue)) == ["NORMAL-1", "INVERTED-2"])
    }

    @Test func nonUTF8PayloadsKeepTheirExactBytes() throws {
        let detector = try CodeDetector()
        var sawBinary = false
        for s in try QRTestCorpus.samples(.nonUTF8, count: 6, seed: 9) {
            let found = try detector.detect(in: s.image)
            #expect(found.count == 1, "\(s.name)")
            guard let code = found.first else { continue }
            #expect(code.payload == s.codes[0].payload)
            if code.payload.contains(0x00) {
                sawBinary = true
                #expect(code.stringValue == nil)
            } else {
                #expect(code.stringValue != nil)
            }
        }
        #expect(sawBinary)
    }

    /// The ZBar scanner underneath is renewed after `renewalInterval` symbols (ZBar keeps part of
    /// every symbol it decodes for its lifetime) and the renewed one keeps the configuration:
    /// QR only, raw bytes (without `ZBAR_CFG_BINARY` these payloads come back re-encoded).
    @Test func aRenewedZBarScannerKeepsItsConfiguration() throws {
        let payload: [UInt8] = [0xFF, 0x00, 0x80, 0xC3, 0x28, 0x41, 0xFE]
        let code = try CodeImaging.gray(try QRCodeImage.make(payload: payload, correction: 1, moduleSize: 3))
        let scanner = try ZBarScanner()
        scanner.enable([.qr])
        var exact = 0
        for _ in 0..<(ZBarScanner.renewalInterval + 20) {
            exact += try scanner.scan(code).filter { $0.bytes == payload && $0.type == .qr }.count
        }
        #expect(scanner.renewals == 1)
        #expect(exact == ZBarScanner.renewalInterval + 20)
        #expect(scanner.config(symbology: 64, config: CodeSymbology.configBinary) == 1)
        #expect(scanner.config(symbology: 13, config: CodeSymbology.configEnable) == 0)
    }

    @Test func charsetPolicy() {
        #expect(CodeText.string(from: Array("Grüße ✓".utf8)) == "Grüße ✓")
        #expect(CodeText.string(from: [0x43, 0x61, 0x66, 0xE9]) == "Café")
        #expect(CodeText.string(from: [0x93, 0xFA, 0x96, 0x7B]) == "日本")
        #expect(CodeText.string(from: [0x00, 0xFF, 0x80, 0x01, 0x41]) == nil)
    }

    @Test func utf8TextDecodesToTheRightString() throws {
        let text = "Grüße aus Köln – 日本語 ✓"
        let symbol = try QRCodeImage.make(payload: Array(text.utf8), correction: 1, moduleSize: 4)
        let image = try frame(width: 640, height: 480, codes: [(symbol, 100, 60)])
        let found = try CodeDetector().detect(in: image)
        #expect(found.count == 1)
        #expect(found.first?.stringValue == text)
        #expect(found.first?.payload == Array(text.utf8))
    }

    @Test func noFalseDecodesOnFixturePhotos() throws {
        let detector = try CodeDetector()
        var checked = 0
        for dir in ["Tests/Fixtures/faces/images", "Tests/Fixtures/faces/negatives"] {
            let path = packageRoot.appendingPathComponent(dir).path
            for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() {
                let found = try detector.detect(in: try ImageFolderSource.decode(path + "/" + name))
                #expect(found.isEmpty, "\(name): \(found.map(\.payload))")
                checked += 1
            }
        }
        #expect(checked >= 10)
    }

    /// Corners start at the symbol's own top-left finder pattern and go clockwise, whatever
    /// the rotation.
    @Test(arguments: [0, 90, 180, 270]) func cornersAreClockwiseFromTheCodesTopLeft(degrees: Int) throws {
        let moduleSize = 5
        let upright = try QRCodeImage.make(payload: Array("corner test".utf8), correction: 1, moduleSize: moduleSize)
        let rotated = try PixelBuffer(width: upright.height, height: upright.width, pixelFormat: .bgr)
        var err = cvb_error()
        #expect(PixelBuffer.withBridgeImages(upright, rotated) { cvb_image_rotate_mirror(&$0, &$1, Int32(degrees), 0, &err) } == 0)
        let (x0, y0) = (200, 100)
        let image = try frame(width: 640, height: 480, codes: [(rotated, x0, y0)])
        let found = try CodeDetector().detect(in: image)
        try #require(found.count == 1)
        let corners = found[0].corners
        try #require(corners.count == 4)
        // The symbol (quiet zone excluded) in the upright image, clockwise from top-left.
        let side = Double(upright.width)
        let quiet = (side - Double(21 * moduleSize)) / 2
        let upCorners = [(quiet, quiet), (side - quiet, quiet), (side - quiet, side - quiet), (quiet, side - quiet)]
        // Rotating the picture clockwise by `degrees` moves each point accordingly.
        let expected = upCorners.map { (x, y) -> CGPoint in
            let (rx, ry): (Double, Double)
            switch degrees {
            case 90: (rx, ry) = (side - y, x)
            case 180: (rx, ry) = (side - x, side - y)
            case 270: (rx, ry) = (y, side - x)
            default: (rx, ry) = (x, y)
            }
            return CGPoint(x: (rx + Double(x0)) / 640, y: (ry + Double(y0)) / 480)
        }
        for (got, want) in zip(corners, expected) {
            #expect(abs(Double(got.x - want.x)) < 0.02 && abs(Double(got.y - want.y)) < 0.02, "\(got) vs \(want)")
        }
        #expect(found[0].bounds.contains(CGPoint(x: (Double(x0) + side / 2) / 640, y: (Double(y0) + side / 2) / 480)))
    }

    @Test func rectOfInterestExcludesCodesOutsideIt() throws {
        let left = try QRCodeImage.make(payload: Array("left".utf8), correction: 1, moduleSize: 5)
        let right = try QRCodeImage.make(payload: Array("right".utf8), correction: 1, moduleSize: 5)
        let image = try frame(width: 640, height: 480, codes: [(left, 40, 150), (right, 420, 150)])
        let detector = try CodeDetector()
        #expect(Set(try detector.detect(in: image).compactMap(\.stringValue)) == ["left", "right"])
        detector.rectOfInterest = CGRect(x: 0, y: 0, width: 0.5, height: 1)
        let found = try detector.detect(in: image)
        #expect(found.compactMap(\.stringValue) == ["left"])
        #expect(found.allSatisfy { $0.bounds.maxX <= 0.5 })
        // Coordinates stay in the whole frame's device space.
        #expect(found.first.map { $0.bounds.minX > 0.05 && $0.bounds.minX < 0.2 } == true)
    }

    @Test func qrIsAlwaysAvailable() {
        #expect(CodeDetector.availableMetadataObjectTypes.contains(.qr))
        #expect(CodeDetector.availableMetadataObjectTypes.contains(.ean13))
    }

    /// A textured frame without a code (seeded noise, like a webcam's view of a room) costs the
    /// finder checks only (at half, full and quarter size, and the zxing-cpp gate's own full-size
    /// look): no finder anywhere, so no zxing-cpp read, no ZBar scan and no rescue pass runs.
    @Test func texturedCodeFreeFramesRunNoRescuePass() throws {
        let detector = try CodeDetector()
        for (w, h) in [(640, 480), (1280, 720)] {
            let f = try PixelBuffer(width: w, height: h, pixelFormat: .bgr)
            var err = cvb_error()
            #expect(f.withBridgeImage { cvb_image_fill_noise(&$0, 7, 112, 14, &err) } == 0)
            let before = detector.passCounts
            #expect(try detector.detect(in: f).isEmpty)
            let after = detector.passCounts
            #expect(after.zbarScans == before.zbarScans)
            #expect(after.zxingReads == before.zxingReads)
            #expect(after.finderChecks - before.finderChecks == 4)
            #expect(after.findersSeen == before.findersSeen)
            #expect(after.rescues == before.rescues)
            #expect(after.localisations == before.localisations)
        }
        // Generated clutter (blurred noise and flat rectangles) too.
        for seed in UInt64(0)..<4 {
            let before = detector.passCounts
            #expect(try detector.detect(in: try QRTestCorpus.background(width: 640, height: 480, seed: seed)).isEmpty)
            #expect(detector.passCounts.rescues == before.rescues, "clutter \(seed)")
        }
    }

    /// Every 2-D type on textured code-free frames: the finder looks and their cues, and no
    /// decoder. ZBar reads none of these types but QR (it has a number for PDF417 and decodes
    /// none), so it has nothing to scan for once no finder shows; before, PDF417 sent every
    /// frame through ZBar's three whole-frame linear scans.
    @Test func everyTwoDimensionalTypeCostsACodeFreeFrameNoDecoderPass() throws {
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        var frames: [PixelBuffer] = []
        for seed in UInt64(0)..<3 {
            let f = try PixelBuffer(width: 640, height: 480, pixelFormat: .bgr)
            var err = cvb_error()
            #expect(f.withBridgeImage { cvb_image_fill_noise(&$0, 7 + seed, 112, 14, &err) } == 0)
            frames.append(f)
        }
        for frame in frames {
            let before = detector.passCounts
            #expect(try detector.detect(in: frame).isEmpty)
            let after = detector.passCounts
            #expect(after.zbarScans == before.zbarScans)
            #expect(after.zxingReads == before.zxingReads)
            #expect(after.rescues == before.rescues)
        }
    }

    /// A code on a textured background whose finders show at half size: with ZBar alone, one
    /// ZBar scan of the region around them reads it (no scan of the whole frame), the full-size
    /// finder check explains every finder by that code, so no full-size scan of the background
    /// follows; a second, small code beside it still sends the detector looking (and is read).
    @Test func aReadCodeOnTextureStopsAfterOneScan() throws {
        var zbarPasses = CodeDetector.Passes()
        zbarPasses.zxing = false
        let detector = try CodeDetector(passes: zbarPasses)
        func frame(_ codes: [(PixelBuffer, Int, Int)]) throws -> PixelBuffer {
            let f = try PixelBuffer(width: 1280, height: 720, pixelFormat: .bgr)
            var err = cvb_error()
            #expect(f.withBridgeImage { cvb_image_fill_noise(&$0, 7, 112, 14, &err) } == 0)
            for (code, x0, y0) in codes {
                for y in 0..<code.height {
                    for x in 0..<code.width {
                        let v = code.pixel(x: x, y: y)[0]
                        for c in 0..<3 { (f.baseAddress + (y0 + y) * f.bytesPerRow + (x0 + x) * 3 + c).storeBytes(of: v, as: UInt8.self) }
                    }
                }
            }
            return f
        }
        let big = try QRCodeImage.make(payload: Array("BIG-ONE".utf8), moduleSize: 6)
        let before = detector.passCounts
        #expect(try detector.detect(in: try frame([(big, 300, 200)])).compactMap(\.stringValue) == ["BIG-ONE"])
        let after = detector.passCounts
        #expect(after.zbarScans - before.zbarScans == 1, "only the scan around the finders")
        #expect(after.finderChecks - before.finderChecks == 2, "half size, then full size")
        #expect(after.rescues == before.rescues)

        let small = try QRCodeImage.make(payload: Array("SMALL-TWO".utf8), moduleSize: 2)
        let found = try detector.detect(in: try frame([(big, 300, 200), (small, 900, 300)]))
        #expect(Set(found.compactMap(\.stringValue)) == ["BIG-ONE", "SMALL-TWO"])
    }

    /// A code with large modules (14 px: its finders exceed the threshold's window at full and
    /// half size) is still seen, at quarter size, and read.
    @Test func aCodeWithLargeModulesIsRead() throws {
        let detector = try CodeDetector()
        let code = try QRCodeImage.make(payload: Array("LARGE".utf8), moduleSize: 14)
        let f = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
        memset(f.baseAddress, 200, f.bytesPerRow * f.height)
        #expect(code.width <= 460)
        for y in 0..<code.height {
            for x in 0..<code.width {
                (f.baseAddress + (10 + y) * f.bytesPerRow + 90 + x).storeBytes(of: code.pixel(x: x, y: y)[0], as: UInt8.self)
            }
        }
        #expect(try detector.detect(in: f).compactMap(\.stringValue) == ["LARGE"])
    }

    /// Scanning only the region around the finders seen at half size reads what the whole
    /// half-size scan and the passes after it read: same decodes with the pass on and off.
    @Test func scanningAroundFindersLosesNoDecode() throws {
        let located = try CodeDetector()
        var wholePasses = CodeDetector.Passes()
        wholePasses.finderLocate = false
        let whole = try CodeDetector(passes: wholePasses)
        let (l, w, total) = try decodes(located, whole, in: [.plain, .rotated, .multiple, .lowContrast], count: 3, seed: 11)
        #expect(l == w, "located \(l) vs whole \(w) of \(total)")
        #expect(l >= total * 3 / 4, "\(l) of \(total)")
    }

    /// Rotated codes are warped upright at the target module size around their finders before
    /// ZBar scans them: the same codes are read as with the axis-aligned area scan, from well
    /// under half the pixels, and their corners still land on the drawn symbol's corners, in
    /// order (clockwise from its own top-left).
    @Test func rotatedCodesAreReadUprightFromFewerPixels() throws {
        // ZBar's passes alone (zxing-cpp would read these codes before any of them ran).
        var uprightPasses = CodeDetector.Passes()
        uprightPasses.zxing = false
        let upright = try CodeDetector(passes: uprightPasses)
        var alignedPasses = uprightPasses
        alignedPasses.areaModuleSize = 0
        let aligned = try CodeDetector(passes: alignedPasses)
        var checked = 0
        let (u, a, total) = try decodes(upright, aligned, in: [.rotated, .plain], count: 6, seed: 5) { s throws in
            let size = CGSize(width: s.image.width, height: s.image.height)
            for found in try upright.detect(in: s.image) {
                guard let code = s.codes.first(where: { $0.payload == found.payload }) else { continue }
                for (got, want) in zip(found.corners, code.corners) {
                    let dx = Double(got.x) * Double(size.width) - Double(want.x)
                    let dy = Double(got.y) * Double(size.height) - Double(want.y)
                    #expect((dx * dx + dy * dy).squareRoot() < 1.5 * code.moduleSize, "\(s.name): \(got) vs \(want)")
                }
                checked += 1
            }
        }
        #expect(u == a, "upright \(u) vs aligned \(a) of \(total)")
        #expect(u == total)
        #expect(checked >= 10)
        // `each` ran `upright` once more per sample: compare per detection.
        let pixelsUpright = Double(upright.passCounts.zbarPixels) / 2, pixelsAligned = Double(aligned.passCounts.zbarPixels)
        #expect(pixelsUpright < 0.5 * pixelsAligned, "\(pixelsUpright) vs \(pixelsAligned) pixels scanned")
    }

    /// Codes too small for the half-size scan show their finder patterns, so the rescue passes
    /// still run and read them; the finder gate changes no decode there.
    @Test func smallCodesPassTheFinderGate() throws {
        let gated = try CodeDetector()
        var ungatedPasses = CodeDetector.Passes()
        ungatedPasses.finderGate = false
        let ungated = try CodeDetector(passes: ungatedPasses)
        let (g, u, total) = try decodes(gated, ungated, in: [.small, .blurred], count: 4, seed: 3) { s throws in
            guard s.category == .small else { return }
            let gray = try CodeImaging.gray(s.image)
            let finders = try FinderEvidence.candidates(gray)
            #expect(!finders.isEmpty, "\(s.name)")
            // The gate's sparse last look still sees 2-px modules.
            let passes = CodeDetector.Passes()
            let sparse = try FinderEvidence.findersInScannedRows(
                gray, mean: try FinderEvidence.localMean(gray), offset: passes.zxingGateFullSizeOffset ?? 15,
                rowStep: passes.zxingGateRowStep)
            #expect(!sparse.isEmpty, "\(s.name)")
        }
        #expect(gated.passCounts.rescues > 0)
        #expect(g == u, "gated \(g) vs ungated \(u) of \(total)")
        #expect(g >= 6)
    }

    /// The gate's sparse look thresholds only the rows it scans; it must find exactly what the
    /// whole thresholded image gives, at every offset (rounding, saturation at 0) and row step.
    @Test func thresholdingOnDemandFindsWhatTheWholeImageGives() throws {
        var images: [PixelBuffer] = []
        for category in [QRTestCorpus.Category.small, .multiple, .inverted, .lowContrast] {
            for s in try QRTestCorpus.samples(category, count: 3, seed: 11) { images.append(try CodeImaging.gray(s.image)) }
        }
        images.append(try CodeImaging.gray(try QRTestCorpus.background(width: 333, height: 251, seed: 5)))
        var compared = 0
        for gray in images {
            let mean = try FinderEvidence.localMean(gray)
            for offset in [-3.0, 0, 2.5, 6, 15, 300] {
                for step in [1, 2, 4] {
                    let whole = try FinderEvidence.finders(gray, mean: mean, offset: offset, rowStep: step)
                    let onDemand = try FinderEvidence.findersInScannedRows(gray, mean: mean, offset: offset, rowStep: step)
                    #expect(whole.map(\.centre) == onDemand.map(\.centre), "offset \(offset), step \(step)")
                    #expect(whole.map(\.dark) == onDemand.map(\.dark))
                    compared += whole.count
                }
            }
        }
        #expect(compared > 50)
    }

    /// The looks the run of the other types takes after the QR run read a code leave its pixels
    /// flat (`ScanRun.readBefore`): neither the full look nor the gate's sparse one sees the
    /// code's finders again; without the code's outline both do.
    @Test func looksLeaveACodeReadBeforeFlat() throws {
        let gray = try CodeImaging.gray(try QRTestCorpus.turnedCode(version: 3, module: 4, degrees: 30, seed: 9).frame)
        let mean = try FinderEvidence.localMean(gray)
        // A 12-gon of radius 110 around the code (148 px with its quiet zone, turned 30°).
        let outline = (0..<12).map { i in
            CGPoint(x: 320 + 110 * cos(Double(i) * .pi / 6), y: 240 + 110 * sin(Double(i) * .pi / 6))
        }
        #expect(try FinderEvidence.look(gray, mean: mean, cues: []).finders.count >= 3)
        #expect(try FinderEvidence.look(gray, mean: mean, ignoringCodes: [outline], cues: []).finders.isEmpty)
        let sparse = { (codes: [[CGPoint]]) throws in
            try FinderEvidence.lookInScannedRows(gray, mean: mean, ignoringCodes: codes, rowStep: 2, cues: []).finders
        }
        #expect(try sparse([]).count >= 3)
        #expect(try sparse([outline]).isEmpty)
    }

    /// A code's outline over the rows' first pixels (a code cut off by the frame's left edge):
    /// the gate's sparse look blanks its rows only, and the runs right of the code keep their
    /// colours (`scanRow` takes them from the row, not from `pixel`): an Aztec symbol there keeps
    /// its cue.
    @Test func aCodeAtTheRowsStartLeavesTheCuesRightOfIt() throws {
        let printed = try SymbolCueTests.fixture("Tests/Fixtures/codes/aztec.png")
        let box = SymbolCueTests.darkBox(printed)
        let gray = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
        try Imaging.fill(gray, x: 0, y: 0, width: 640, height: 480, red: 200, green: 200, blue: 200, "test frame")
        let (from, to) = Placement.turned(
            CGRect(x: Double(box.x) - 8, y: Double(box.y) - 8, width: Double(box.width) + 16, height: Double(box.height) + 16),
            scale: 0.75, degrees: 0, centre: CGPoint(x: 420, y: 240))
        try CodeImaging.warp(printed, into: gray, homography: try CodeImaging.homography(from: from, to: to))
        let mean = try FinderEvidence.localMean(gray)
        let code = [CGPoint(x: -10, y: -10), CGPoint(x: 60, y: -10), CGPoint(x: 60, y: 490), CGPoint(x: -10, y: 490)]
        let look = { (codes: [[CGPoint]]) throws in
            try FinderEvidence.lookInScannedRows(gray, mean: mean, ignoringCodes: codes, offset: 15, rowStep: 1, cues: [.aztec]).cues
        }
        let plain = try look([]).bullseyes.map(\.centre)
        #expect(!plain.isEmpty)
        #expect(try look([code]).bullseyes.map(\.centre) == plain)
    }

    /// `flatSpans`: the columns whose pixel centres lie inside each polygon, clipped to the row.
    @Test func flatSpansAreThePixelCentresInside() {
        let box = [CGPoint(x: 0, y: 0), CGPoint(x: 4, y: 0), CGPoint(x: 4, y: 3), CGPoint(x: 0, y: 3)]
        #expect(FinderEvidence.flatSpans([box], y: 1, width: 10) == [0..<4])
        #expect(FinderEvidence.flatSpans([box], y: 3, width: 10).isEmpty)
        #expect(FinderEvidence.flatSpans([box], y: 1, width: 3) == [0..<3])
        // A triangle (either winding): row 1's centre line y = 1.5 lies inside from x = 1.5 (on
        // the edge: in) to 8.
        let triangle = [CGPoint(x: 0, y: 0), CGPoint(x: 8, y: 0), CGPoint(x: 8, y: 8)].reversed().map { $0 }
        #expect(FinderEvidence.flatSpans([triangle], y: 1, width: 10) == [1..<8])
        #expect(FinderEvidence.flatSpans([box, triangle], y: 1, width: 10) == [0..<4, 1..<8])
        #expect(FinderEvidence.flatSpans([box], y: -1, width: 10).isEmpty)
        // Corners far outside the image (or not numbers) clip to the row, never trap.
        let far = [CGPoint(x: -1e300, y: 0), CGPoint(x: 1e300, y: 0), CGPoint(x: 1e300, y: 4), CGPoint(x: -1e300, y: 4)]
        #expect(FinderEvidence.flatSpans([far], y: 2, width: 10) == [0..<10])
        let beyond = [CGPoint(x: 50, y: 0), CGPoint(x: 1e300, y: 0), CGPoint(x: 1e300, y: 4), CGPoint(x: 50, y: 4)]
        #expect(FinderEvidence.flatSpans([beyond], y: 2, width: 10).isEmpty)
        let nan = [CGPoint(x: CGFloat.nan, y: 0), CGPoint(x: 4, y: CGFloat.nan), CGPoint(x: 4, y: 3)]
        #expect(FinderEvidence.flatSpans([nan], y: 1, width: 10).count <= 1)
        #expect(FinderEvidence.flatSpans([[CGPoint(x: 0, y: 0), CGPoint(x: 9, y: 9)]], y: 2, width: 10).isEmpty)
    }
}
