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
}
