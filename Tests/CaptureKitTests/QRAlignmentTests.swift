import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// The perspective map pinned by a QR code's alignment patterns (`QRAlignment`). Generated
/// frames only (`QRTestCorpus`, seed 4242, which the benchmark's tables do not use).
@Suite struct QRAlignmentTests {
    /// ISO/IEC 18004 annex E: version 2 has one pattern at (18, 18); version 7 rows and columns
    /// 6, 22, 38 (six patterns without the finders' three corners); version 32 steps by 26; 40
    /// has 46.
    @Test func patternCentresFollowTheStandard() {
        #expect(QRAlignment.centres(version: 1).isEmpty)
        #expect(QRAlignment.centres(version: 2) == [CGPoint(x: 18.5, y: 18.5)])
        let seven = QRAlignment.centres(version: 7)
        #expect(seven.count == 6)
        #expect(Set(seven.map(\.x)) == [6.5, 22.5, 38.5])
        #expect(!seven.contains(CGPoint(x: 6.5, y: 6.5)) && !seven.contains(CGPoint(x: 38.5, y: 6.5)))
        #expect(seven.contains(CGPoint(x: 38.5, y: 38.5)))
        #expect(Set(QRAlignment.centres(version: 32).map(\.x)) == [6.5, 34.5, 60.5, 86.5, 112.5, 138.5])
        #expect(QRAlignment.centres(version: 40).count == 46)
        #expect(QRAlignment.centres(version: 14).count == 13)
    }

    /// A pattern of 3-px modules among random modules is found from a prediction two modules
    /// off, to within half a pixel; a solid square of its size is no pattern.
    @Test func aPatternIsFoundNearWhereTheMapPutsIt() throws {
        let module = 3, side = 40
        let image = try PixelBuffer(width: side * module, height: side * module, pixelFormat: .gray)
        var rng = SplitMix64(seed: 11)
        let p = image.baseAddress.assumingMemoryBound(to: UInt8.self)
        // Modules (20, 20) ± 2 hold the pattern; a solid 5×5 block at (6, 6) ± 2.
        for my in 0..<side {
            for mx in 0..<side {
                let ring = max(abs(mx - 20), abs(my - 20)), block = max(abs(mx - 6), abs(my - 6))
                let dark: Bool
                if ring <= 2 { dark = ring != 1 } else if block <= 2 { dark = true } else { dark = rng.next() & 1 == 0 }
                for y in 0..<module {
                    for x in 0..<module { p[(my * module + y) * image.bytesPerRow + mx * module + x] = dark ? 0 : 255 }
                }
            }
        }
        let binary = Thresholded(image)
        let right = CGPoint(x: 3, y: 0), down = CGPoint(x: 0, y: 3)
        // A module's centre: 3 × 20 + 1 px.
        let found = try #require(
            withExtendedLifetime(image) { QRAlignment.locate(binary, near: CGPoint(x: 67, y: 55), right: right, down: down) })
        #expect(abs(found.x - 61) <= 0.5 && abs(found.y - 61) <= 0.5, "\(found)")
        #expect(withExtendedLifetime(image) { QRAlignment.locate(binary, near: CGPoint(x: 19, y: 19), right: right, down: down) } == nil)
        // A prediction or a module sent far off by a bad fit is no place to look (and no trap
        // converting it to a pixel).
        withExtendedLifetime(image) {
            #expect(QRAlignment.locate(binary, near: CGPoint(x: 1e20, y: 5), right: right, down: down) == nil)
            #expect(QRAlignment.locate(binary, near: CGPoint(x: Double.nan, y: 5), right: right, down: down) == nil)
            #expect(QRAlignment.locate(binary, near: CGPoint(x: 60, y: 60), right: CGPoint(x: 1e19, y: 0), down: down) == nil)
        }
    }

    /// Tilted codes (seed 4242) zxing-cpp 3.x reads. Frame 4 (version 10): the far finders'
    /// rows are 2 px, their outlines a few pixels off, and the map they fit puts the far corner
    /// 48 px from the code's; pinned by its alignment patterns it reads. Frame 55 (version 16):
    /// the squeezed finders' outlines fit no map within a module; the squares drawn from their
    /// centres and measures do.
    @Test func steepTiltsArePinnedByTheirAlignmentPatterns() throws {
        let tilted = try QRTestCorpus.samples(.tilted, count: 56, seed: 4242)
        var without = CodeDetector.Passes()
        without.alignmentRefit = false
        let before = try CodeDetector(metadataObjectTypes: [.qr], passes: without)
        for sample in [tilted[4], tilted[55]] {
            let payloads = sample.codes.map(\.payload)
            #expect(try before.detections(in: sample.image).map(\.payload) != payloads, "read without: \(sample.name)")
            let detector = try CodeDetector(metadataObjectTypes: [.qr])
            #expect(try detector.detections(in: sample.image).map(\.payload) == payloads, "\(sample.name)")
        }
        let detector = try CodeDetector(metadataObjectTypes: [.qr])
        _ = try detector.detections(in: tilted[4].image)
        #expect(detector.passCounts.alignmentRefits >= 1)
    }

    /// Frame 14 of `tilted` (seed 4242, version 15): the full-size look sees the near two
    /// finders; the far one, squeezed to rows of 2 px, shows only under the gate look's
    /// threshold, whose finders only gated the frame. The triple it completes is read
    /// (`ScanRun.readGateLookTriples`). Frame 8 of `lowContrast` (seed 99, version 15): the
    /// half-size look sees two finders of the faint code, the full-size look none, the gate
    /// look all three.
    @Test func aFinderOnlyTheGateLookSeesCompletesItsTriple() throws {
        let tilted = try QRTestCorpus.samples(.tilted, count: 15, seed: 4242)[14]
        let faint = try QRTestCorpus.samples(.lowContrast, count: 9, seed: 99)[8]
        for sample in [tilted, faint] {
            let payloads = sample.codes.map(\.payload)
            var without = CodeDetector.Passes()
            without.gateLookTriples = false
            #expect(
                try CodeDetector(metadataObjectTypes: [.qr], passes: without).detections(in: sample.image).map(\.payload) != payloads,
                "read without: \(sample.name)")
            let detector = try CodeDetector(metadataObjectTypes: [.qr])
            #expect(try detector.detections(in: sample.image).map(\.payload) == payloads, "\(sample.name)")
            #expect(detector.passCounts.gateLookTriples >= 1)
        }
    }
}
