import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// A faint QR code whose quiet zone gives onto a bright surround: every threshold taken over
/// the surround reads the whole code as dark. Binarised at the level of its own finders
/// (`CodeLevel`, `Passes.codeLevel`), the code's upright image reads; below the gate's size the
/// finder triples are read too once the whole-image reads found nothing.
@Suite struct CodeLevelTests {
    /// `QRTestCorpus.framedFaintCodes()` read with every 2-D type (`scan`'s default), with and
    /// without the code's own level: the names of the frames read.
    static func reads(codeLevel: Bool) throws -> Set<String> {
        var passes = CodeDetector.Passes()
        passes.codeLevel = codeLevel
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes, passes: passes)
        var read: Set<String> = []
        for code in try QRTestCorpus.framedFaintCodes()
        where try detector.detections(in: code.frame).contains(where: { $0.payload == code.payload }) {
            read.insert(code.name)
        }
        return read
    }

    @Test func framedFaintCodesOfLargeModulesAreReadAtTheirFindersLevel() throws {
        let large = try QRTestCorpus.framedFaintCodes().map(\.name).filter { $0.contains(" 8px ") }
        #expect(large.count == 20)
        let with = try Self.reads(codeLevel: true)
        let without = try Self.reads(codeLevel: false)
        // Every code of 8-px modules, in 640x480 frames and in 352x352 ones (below the gate's
        // size, where only the finder triples' reads see them).
        #expect(Set(large).subtracting(with).isEmpty, "missed: \(Set(large).subtracting(with).sorted())")
        #expect(with.isSuperset(of: without), "lost: \(without.subtracting(with).sorted())")
        // Without the code's level the dark-on-light ones and every small frame's are missed.
        let needed = large.filter { !without.contains($0) }
        #expect(needed.filter { $0.hasSuffix("352x352") }.count == 8, "\(needed)")
        #expect(needed.filter { $0.contains("dark-on-light") && $0.hasSuffix("640x480") }.count == 6, "\(needed)")
    }

    @Test func theLevelLiesBetweenTheFindersTwoColoursAndNoiseHasNone() throws {
        // Three finders drawn upright: 7x7 modules of 4 px, dark 60 / light 100, on a light 235
        // surround that lies outside their squares.
        let image = try PixelBuffer(width: 120, height: 120, pixelFormat: .gray)
        try Imaging.fill(image, x: 0, y: 0, width: 120, height: 120, red: 235, green: 235, blue: 235, "test image")
        let centres = [CGPoint(x: 20, y: 20), CGPoint(x: 100, y: 20), CGPoint(x: 20, y: 100)]
        for c in centres {
            let x = Int(c.x) - 14, y = Int(c.y) - 14
            for (inset, value) in [(0, UInt8(60)), (4, 100), (8, 60)] {
                try Imaging.fill(
                    image, x: x + inset, y: y + inset, width: 28 - 2 * inset, height: 28 - 2 * inset, red: value, green: value,
                    blue: value, "test image")
            }
        }
        let level = try #require(CodeLevel.level(image, finders: centres, module: 4))
        #expect(level >= 60 && level < 100, "\(level)")
        // A plain surface with a camera's sensor noise: no level.
        let plain = try PixelBuffer(width: 120, height: 120, pixelFormat: .gray)
        try Imaging.fill(plain, x: 0, y: 0, width: 120, height: 120, red: 128, green: 128, blue: 128, "test image")
        try CodeImaging.addNoise(plain, seed: 7, standardDeviation: 3)
        #expect(CodeLevel.level(plain, finders: centres, module: 4) == nil)
        // A finder reaching past the image's edge: no level.
        #expect(CodeLevel.level(image, finders: [CGPoint(x: 5, y: 60)], module: 4) == nil)
    }
}
