import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// QR codes tilted 30–50°, rectified through their finders' outlines (`QRPerspective`,
/// `ScanRun.scanPerspective`). Generated frames only (`QRTestCorpus`, a seed the benchmark does
/// not use).
@Suite struct QRPerspectiveTests {
    @Test func aHomographyIsFittedFromMoreThanFourPoints() throws {
        let truth = Homography(m: [1.2, 0.1, 40, -0.05, 0.9, 25, 0.0012, -0.0008, 1])
        let from = (0..<12).map { (i: Int) -> CGPoint in
            let x: Double = Double(i % 4) * 9 + Double(i / 4)
            let y: Double = Double(i / 4) * 11 + Double(i % 3)
            return CGPoint(x: x, y: y)
        }
        let fitted = try #require(QRPerspective.fit(from: from, to: from.map(truth.apply)))
        for p in [CGPoint(x: 0, y: 0), CGPoint(x: 30, y: 25), CGPoint(x: 45, y: 45)] {
            let a = fitted.apply(p), b = truth.apply(p)
            #expect(hypot(a.x - b.x, a.y - b.y) < 1e-6, "\(p)")
        }
        // Three collinear points and a repeat are no homography.
        let line = [CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 1), CGPoint(x: 2, y: 2), CGPoint(x: 2, y: 2)]
        #expect(QRPerspective.fit(from: line, to: line) == nil)
    }

    /// A code of version 7 tilted 30–50° (frame 28 of seed 7): the affine warp of its finder
    /// triple and every other pass miss it; the finders' outlines rectify it.
    @Test func aSteeplyTiltedCodeIsRectifiedFromItsFinderOutlines() throws {
        let sample = try QRTestCorpus.samples(.tilted, count: 29, seed: 7)[28]
        let payload = try #require(sample.codes.first?.payload)
        var without = CodeDetector.Passes()
        without.perspective = false
        let before = try CodeDetector(metadataObjectTypes: [.qr], passes: without).detections(in: sample.image)
        #expect(!before.map(\.payload).contains(payload), "read without the rescue: the test no longer shows it")
        let codes = try CodeDetector(metadataObjectTypes: [.qr]).detections(in: sample.image)
        #expect(codes.map(\.payload) == [payload])
    }

    /// A version 40 code of 2.2-px modules (high versions at 640x480, frame 8 of seed 7): nearest
    /// sampling leaves rings of 1–3 px, and a diagonal across its finders measured a ring one
    /// pixel long of a 14-pixel pattern, which half a module of tolerance rejected; with half a
    /// pixel more (the full-size look) the three finders are seen, and the code is read through its finders' outlines
    /// (the upright image is larger than the half-size scan's budget, but that scan cannot read
    /// modules of 2 px).
    @Test func aHighVersionCodeOfTwoPixelModulesIsFoundAndRead() throws {
        let sample = try QRTestCorpus.samples(.highVersion, count: 9, seed: 7)[8]
        let code = try #require(sample.codes.first)
        #expect(code.version == 40 && code.moduleSize < 2.5, "the frame changed: the test no longer shows it")
        let gray = try CodeImaging.gray(sample.image)
        // The full-size look's half pixel of slack finds its three finders; without it, not all.
        #expect(try FinderEvidence.look(gray, cues: [], pixelSlack: true).finders.count >= 3)
        #expect(try FinderEvidence.look(gray, cues: []).finders.count < 3)
        let codes = try CodeDetector(metadataObjectTypes: [.qr]).detections(in: sample.image)
        #expect(codes.map(\.payload) == [code.payload])
    }

    /// A version 13 code seen steeply from below (frame 39 of `perspective`, seed 7): the near
    /// finder's modules measure 3.6 px along its row and 4.1 down its column, the far ones' 2.7
    /// and 2.3, so the longer measures differ 1.53-fold; when triples allowed 1.5, no triple was
    /// formed and no pass read the code. Finders twice as large as the others still make none.
    @Test func aTrapezoidsNearFinderStillMakesATriple() throws {
        func finder(_ x: Double, _ y: Double, _ row: Double, _ column: Double) -> FinderEvidence.Finder {
            FinderEvidence.Finder(centre: CGPoint(x: x, y: y), module: row, dark: true, columnModule: column)
        }
        let seen = [finder(198, 181, 19.0 / 7, 16.0 / 7), finder(362, 183, 19.0 / 7, 16.0 / 7), finder(169, 369, 25.0 / 7, 29.0 / 7)]
        #expect(ScanRun.triples(seen).count == 1)
        var larger = seen
        larger[2].module *= 1.35
        larger[2].columnModule = larger[2].columnModule.map { $0 * 1.35 }
        #expect(ScanRun.triples(larger).isEmpty)
        let sample = try QRTestCorpus.samples(.perspective, count: 40, seed: 7)[39]
        let payload = try #require(sample.codes.first?.payload)
        let codes = try CodeDetector(metadataObjectTypes: [.qr]).detections(in: sample.image)
        #expect(codes.map(\.payload) == [payload])
    }

    /// Finders of a code tilted about a vertical line: the row measures of the far finder are
    /// squeezed (modules 3 and 5 px along rows, 5 px down columns) and so is the side along the
    /// rows (100 px against 160). Undoing the squeeze the finders show, the three make a right
    /// angle with equal sides; square finders at the same places do not.
    @Test func aTripleSqueezedLikeItsFindersIsOneCode() {
        func finder(_ x: Double, _ y: Double, _ row: Double, _ column: Double?) -> FinderEvidence.Finder {
            FinderEvidence.Finder(centre: CGPoint(x: x, y: y), module: row, dark: true, columnModule: column)
        }
        let squeezed = [finder(100, 100, 5 * 0.62, 5), finder(200, 100, 3 * 0.62 / 0.6, 3 / 0.6), finder(100, 260, 5 * 0.62, 5)]
        #expect(ScanRun.corner(of: squeezed) == 0)
        #expect(ScanRun.triples(squeezed).count == 1)
        let square = squeezed.map { f -> FinderEvidence.Finder in
            var f = f
            f.columnModule = f.module
            return f
        }
        #expect(ScanRun.corner(of: square) == nil)
    }

    /// Steeply tilted and squeezed codes (frames 4, 8, 18 and 27 of `tilted`, 20 of `perspective`,
    /// seed 7) that the corpus's peer reads: their triples are formed (squeezed finders) and their
    /// versions estimated from both ends of each side, where the top-left finder's own scale put
    /// the version out of the range tried.
    @Test func steeplyTiltedCodesAreRead() throws {
        let tilted = try QRTestCorpus.samples(.tilted, count: 28, seed: 7)
        let perspective = try QRTestCorpus.samples(.perspective, count: 21, seed: 7)
        let detector = try CodeDetector(metadataObjectTypes: [.qr])
        for sample in [tilted[4], tilted[8], tilted[18], tilted[27], perspective[20]] {
            let codes = try detector.detections(in: sample.image)
            #expect(codes.map(\.payload) == sample.codes.map(\.payload), "\(sample.name)")
        }
    }

    /// Versions 15 and 16 tilted steeply (frames 62 and 137 of `tilted`, seed 7 at 160 samples):
    /// the far finders' rings are 1–2 px down their columns and their outlines do not read, so
    /// the perspective rescue had nothing to fit. Squares drawn from the finders' centres and
    /// their row and column module measures (`QRPerspective.measuredOutlines`) carry the
    /// perspective (the near finder measures larger), and both codes are read. The alignment
    /// refit draws the same squares for a triple whose perspective read failed (`refitTriples`),
    /// so "without" turns both off.
    @Test func codesWhoseFarFindersHaveNoReadableOutlineAreRectifiedFromTheirMeasures() throws {
        let tilted = try QRTestCorpus.samples(.tilted, count: 138, seed: 7)
        var without = CodeDetector.Passes()
        without.measuredOutlines = false
        without.alignmentRefit = false
        let before = try CodeDetector(metadataObjectTypes: [.qr], passes: without)
        let detector = try CodeDetector(metadataObjectTypes: [.qr])
        for sample in [tilted[62], tilted[137]] {
            let payloads = sample.codes.map(\.payload)
            #expect(sample.codes.first.map { $0.version >= 15 } == true, "the frame changed: \(sample.name)")
            #expect(try before.detections(in: sample.image).map(\.payload) != payloads, "read without: \(sample.name)")
            #expect(try detector.detections(in: sample.image).map(\.payload) == payloads, "\(sample.name)")
        }
    }

    @Test func measuredOutlinesAreSquaresOfTheFindersModules() throws {
        func finder(_ x: Double, _ y: Double, _ row: Double, _ column: Double) -> FinderEvidence.Finder {
            FinderEvidence.Finder(centre: CGPoint(x: x, y: y), module: row, dark: true, columnModule: column)
        }
        // Upright: corners 3.5 row modules left and right, 3.5 column modules up and down, in
        // the order of `finderCorners`.
        let outlines = try #require(
            QRPerspective.measuredOutlines(
                [finder(100, 100, 2, 4), finder(200, 100, 2, 4), finder(100, 300, 3, 5)],
                right: CGPoint(x: 100, y: 0), down: CGPoint(x: 0, y: 200)))
        #expect(outlines[0] == [CGPoint(x: 93, y: 86), CGPoint(x: 107, y: 86), CGPoint(x: 107, y: 114), CGPoint(x: 93, y: 114)])
        #expect(outlines[2][2] == CGPoint(x: 110.5, y: 317.5))
        // Turned a quarter (rows down the image): each axis takes the other measure.
        let turned = try #require(
            QRPerspective.measuredOutlines(
                [finder(100, 100, 2, 4)], right: CGPoint(x: 0, y: 100), down: CGPoint(x: -100, y: 0)))
        #expect(turned[0][0] == CGPoint(x: 107, y: 86))
        #expect(QRPerspective.measuredOutlines([finder(0, 0, 2, 2)], right: .zero, down: CGPoint(x: 0, y: 1)) == nil)
    }
}
