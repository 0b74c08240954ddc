import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// A faint code beside a brighter flat surround: the half-size finder look's local mean takes the
/// surround in, rises past the code's light modules near its edge, and the quiet zone and the
/// finders' light rings read dark. Its mean caps flat blocks near texture at that texture's level
/// (`CodeImaging.texturedMean`, `Passes.flatBlockRange`).
@Suite struct TexturedMeanTests {
    /// A gray image: `surround` left of column `edge`, a checkerboard of `dark` and `light`
    /// 4-pixel squares from there on.
    static func faintTextureBesideASurround(
        width: Int = 160, height: Int = 64, edge: Int = 64, surround: UInt8, dark: UInt8, light: UInt8
    ) throws -> PixelBuffer {
        let image = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
        for y in 0..<height {
            let row = (image.baseAddress + y * image.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            for x in 0..<width {
                row[x] = x < edge ? surround : ((x / 4 + y / 4) % 2 == 0 ? dark : light)
            }
        }
        return image
    }

    static func level(_ image: PixelBuffer, x: Int, y: Int) -> UInt8 { image.baseAddress.load(fromByteOffset: y * image.bytesPerRow + x, as: UInt8.self) }

    @Test func withoutFlatBlocksItIsThePlainLocalMean() throws {
        let image = try Self.faintTextureBesideASurround(edge: 0, surround: 0, dark: 70, light: 100)
        let plain = try FinderEvidence.localMean(image)
        let textured = try FinderEvidence.texturedMean(image, flatRange: 24)
        for y in 0..<image.height {
            for x in 0..<image.width { #expect(Self.level(plain, x: x, y: y) == Self.level(textured, x: x, y: y)) }
        }
    }

    @Test func aBrightFlatSurroundNoLongerLiftsTheMeanPastTheLightModules() throws {
        let image = try Self.faintTextureBesideASurround(surround: 160, dark: 70, light: 100)
        let plain = try FinderEvidence.localMean(image)
        let textured = try FinderEvidence.texturedMean(image, flatRange: 24)
        // Three pixels into the texture: the plain mean is above its light modules, the textured
        // one between its two levels.
        #expect(Self.level(plain, x: 67, y: 32) > 100)
        #expect((71...99).contains(Self.level(textured, x: 67, y: 32)))
        // Far from the edge both are the texture's mean; far into the surround it is unchanged.
        #expect(Self.level(plain, x: 140, y: 32) == Self.level(textured, x: 140, y: 32))
        #expect(Self.level(textured, x: 2, y: 32) == 160)
        // A surround darker than the texture is not touched.
        let darkSurround = try Self.faintTextureBesideASurround(surround: 30, dark: 70, light: 100)
        let a = try FinderEvidence.localMean(darkSurround), b = try FinderEvidence.texturedMean(darkSurround, flatRange: 24)
        for y in 0..<darkSurround.height {
            for x in 0..<darkSurround.width { #expect(Self.level(a, x: x, y: y) == Self.level(b, x: x, y: y)) }
        }
    }

    @Test func blocksOver256PixelsAndEvenWindowsAreRefused() throws {
        let image = try Self.faintTextureBesideASurround(surround: 160, dark: 70, light: 100)
        #expect(throws: CaptureError.self) { try CodeImaging.texturedMean(image, block: 300, window: 31, flatRange: 24) }
        #expect(throws: CaptureError.self) { try CodeImaging.texturedMean(image, block: 8, window: 30, flatRange: 24) }
    }

    /// The generated corpus's low-contrast QR codes (seed 31337, the frames `Tools/bench-codes
    /// --seed 31337 --samples 40` measures): faint codes on brighter backgrounds.
    @Test func faintCodesBesideABrighterBackgroundAreSeenThroughTheTexturedMean() throws {
        let samples = try QRTestCorpus.samples(.lowContrast, count: 40, seed: 31337)
        func reads(_ flatRange: Int32?) throws -> Set<Int> {
            var passes = CodeDetector.Passes()
            passes.flatBlockRange = flatRange
            let detector = try CodeDetector(metadataObjectTypes: [.qr], passes: passes)
            var read: Set<Int> = []
            for (i, sample) in samples.enumerated() {
                let payloads = try detector.detections(in: sample.image).map(\.payload)
                if sample.expectedPayloads.allSatisfy({ payloads.contains($0) }) { read.insert(i) }
            }
            return read
        }
        let with = try reads(CodeDetector.Passes().flatBlockRange)
        let without = try reads(nil)
        #expect(with.isSuperset(of: without), "lost: \(without.subtracting(with).sorted())")
        #expect(with.count > without.count, "read \(with.count) with the textured mean, \(without.count) without")
    }
}
