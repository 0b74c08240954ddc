import CaptureKit
import Foundation
import Testing

@testable import CaptureVision

/// `MotionDetector` alone, on gray frames drawn here: what moves is found in its first frame,
/// and what does not move (a brightness step, sensor noise, a masked area, a change that
/// stays) is not motion.
@Suite struct MotionDetectorTests {
    static let width = 320, height = 240

    /// A textured gray frame (a gradient of blocks, 40…140, never saturating when brightened
    /// by 1.6) with optional filled rectangles (pixels) and a brightness gain.
    static func frame(blocks: [(x: Int, y: Int, w: Int, h: Int, value: UInt8)] = [], gain: Double = 1, noise: (seed: UInt64, sd: Double)? = nil)
        throws -> PixelBuffer
    {
        let buffer = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
        for by in 0..<(height / 20) {
            for bx in 0..<(width / 20) {
                let v = UInt8(40 + (bx * 7 + by * 13) % 100)
                try Imaging.fill(buffer, x: bx * 20, y: by * 20, width: 20, height: 20, red: v, green: v, blue: v, "test")
            }
        }
        for b in blocks {
            try Imaging.fill(buffer, x: b.x, y: b.y, width: b.w, height: b.h, red: b.value, green: b.value, blue: b.value, "test")
        }
        if gain != 1 { try Imaging.scale(buffer, by: gain, "test") }
        if let noise { try Imaging.addNoise(buffer, seed: noise.seed, standardDeviation: noise.sd, "test") }
        return buffer
    }

    @Test func aStillSceneHasNoMotionAndABlockThatAppearsIsFoundInItsFirstFrame() throws {
        let detector = MotionDetector()
        let still = try Self.frame()
        let first = try detector.process(still, time: 0)
        #expect(first.isFirstFrame && !first.hasMotion)
        for i in 1..<5 { #expect(try !detector.process(still, time: Double(i) / 10).hasMotion) }
        let moved = try detector.process(Self.frame(blocks: [(100, 80, 40, 40, 230)]), time: 0.5)
        #expect(moved.regions.count == 1)
        let box = try #require(moved.regions.first)
        let truth = CGRect(x: 100.0 / 320, y: 80.0 / 240, width: 40.0 / 320, height: 40.0 / 240)
        // Found to within a cell (4 small pixels) and the blur on each side.
        let inner = truth.insetBy(dx: 0.01, dy: 0.01)
        #expect(
            box.minX <= inner.minX && box.minY <= inner.minY && box.maxX >= inner.maxX && box.maxY >= inner.maxY, "\(box)")
        #expect(box.width < truth.width + 0.06 && box.height < truth.height + 0.08, "\(box)")
        #expect(!moved.isGlobalChange)
    }

    /// A 1280- or 1920-wide frame is reduced to 320 in halvings where the factor is even (4: two
    /// halvings' worth, 6: a halving then a third); a 1600-wide one by 5 at once. Each must find
    /// the block where the frame drawn at 320 finds it, and see no motion in a still frame.
    @Test(arguments: [2, 4, 5, 6]) func aLargeFrameIsReducedToTheSameSmallImage(factor: Int) throws {
        func enlarged(_ frame: PixelBuffer) throws -> PixelBuffer {
            let large = try PixelBuffer(width: Self.width * factor, height: Self.height * factor, pixelFormat: .gray)
            try Imaging.resize(frame, into: large, "test")
            return large
        }
        let moving = try Self.frame(blocks: [(100, 80, 40, 40, 230)])
        let reference = MotionDetector(), detector = MotionDetector()
        _ = try reference.process(Self.frame(), time: 0)
        _ = try detector.process(enlarged(Self.frame()), time: 0)
        #expect(try !detector.process(enlarged(Self.frame()), time: 0.1).hasMotion)
        let expected = try #require(try reference.process(moving, time: 0.2).regions.first)
        let found = try detector.process(enlarged(moving), time: 0.2)
        #expect(found.regions.count == 1)
        let box = try #require(found.regions.first)
        // Within one cell (4 small pixels of 320x240) on every side.
        for (a, b, cell) in [(box.minX, expected.minX, 4.0 / 320), (box.maxX, expected.maxX, 4.0 / 320),
                             (box.minY, expected.minY, 4.0 / 240), (box.maxY, expected.maxY, 4.0 / 240)] {
            #expect(abs(a - b) <= cell + 1e-9, "\(box) against \(expected)")
        }
    }

    @Test func aBrightnessStepUpOrDownIsNotMotion() throws {
        let detector = MotionDetector()
        let scene = try Self.frame()
        _ = try detector.process(scene, time: 0)
        _ = try detector.process(scene, time: 0.1)
        // A light switched on: every pixel 1.6 times as bright, at once; then it stays on.
        let brighter = try Self.frame(gain: 1.6)
        for i in 2..<12 {
            let r = try detector.process(brighter, time: Double(i) / 10)
            #expect(!r.hasMotion, "frame \(i): \(r)")
        }
        // And off again, darker than before.
        let darker = try Self.frame(gain: 0.6)
        for i in 12..<22 {
            let r = try detector.process(darker, time: Double(i) / 10)
            #expect(!r.hasMotion, "frame \(i): \(r)")
        }
        // Motion in a brightened scene is still motion.
        let r = try detector.process(Self.frame(blocks: [(200, 120, 40, 40, 250)], gain: 0.6), time: 2.2)
        #expect(r.hasMotion)
    }

    @Test func anAutoExposureRampIsNotMotion() throws {
        let detector = MotionDetector()
        _ = try detector.process(Self.frame(), time: 0)
        for (i, gain) in [1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.3, 1.3].enumerated() {
            let r = try detector.process(Self.frame(gain: gain), time: Double(i + 1) / 10)
            #expect(!r.hasMotion && !r.isGlobalChange, "gain \(gain): \(r)")
        }
    }

    @Test func sensorNoiseIsNotMotion() throws {
        let detector = MotionDetector()
        for i in 0..<20 {
            let r = try detector.process(Self.frame(noise: (UInt64(i + 1), 4)), time: Double(i) / 10)
            #expect(!r.hasMotion, "frame \(i): changed \(r.changedFraction)")
        }
    }

    @Test func masksAndTheRegionOfInterestExcludeMotion() throws {
        let mask = CGRect(x: 0, y: 0, width: 0.5, height: 1)
        let masked = MotionDetector(configuration: .init(masks: [mask]))
        let open = MotionDetector()
        let still = try Self.frame()
        let left = try Self.frame(blocks: [(40, 80, 60, 60, 230)])
        let right = try Self.frame(blocks: [(220, 80, 60, 60, 230)])
        for d in [masked, open] { _ = try d.process(still, time: 0) }
        #expect(try !masked.process(left, time: 0.1).hasMotion)
        #expect(try open.process(left, time: 0.1).hasMotion)
        #expect(try masked.process(right, time: 0.2).hasMotion)
        // Outside the region of interest is as good as masked.
        let boxed = MotionDetector()
        let roi = CGRect(x: 0.5, y: 0, width: 0.5, height: 1)
        _ = try boxed.process(still, time: 0, regionOfInterest: roi)
        #expect(try !boxed.process(left, time: 0.1, regionOfInterest: roi).hasMotion)
    }

    @Test func smallChangesAreBelowTheMinimumArea() throws {
        let detector = MotionDetector(configuration: .init(minimumArea: 0.01))
        _ = try detector.process(Self.frame(), time: 0)
        // 12×12 = 144 px < 1 % of 76 800.
        #expect(try !detector.process(Self.frame(blocks: [(100, 100, 12, 12, 250)]), time: 0.1).hasMotion)
        #expect(try detector.process(Self.frame(blocks: [(100, 100, 40, 40, 250)]), time: 0.2).hasMotion)
    }

    @Test func aChangeThatStaysBecomesBackground() throws {
        let detector = MotionDetector(configuration: .init(adaptationTime: 1))
        _ = try detector.process(Self.frame(), time: 0)
        let moved = try Self.frame(blocks: [(100, 80, 60, 60, 240)])
        #expect(try detector.process(moved, time: 0.1).hasMotion)
        var last = true
        for i in 2...50 { last = try detector.process(moved, time: Double(i) / 10).hasMotion }
        #expect(!last, "still motion after 5 adaptation times")
    }

    @Test func theWholeFrameChangingIsAGlobalChangeThatRestartsTheBackground() throws {
        let detector = MotionDetector()
        _ = try detector.process(Self.frame(), time: 0)
        // Not a brightness step: the picture itself is another (the camera was turned).
        let other = try PixelBuffer(width: Self.width, height: Self.height, pixelFormat: .gray)
        for x in stride(from: 0, to: Self.width, by: 10) {
            let v: UInt8 = (x / 10) % 2 == 0 ? 20 : 220
            try Imaging.fill(other, x: x, y: 0, width: 10, height: Self.height, red: v, green: v, blue: v, "test")
        }
        let turned = try detector.process(other, time: 0.1)
        #expect(turned.isGlobalChange && !turned.hasMotion)
        #expect(try !detector.process(other, time: 0.2).hasMotion)
    }

    @Test func aBadConfigurationOrFormatIsRefused() throws {
        let detector = MotionDetector(configuration: .init(threshold: 0))
        #expect(throws: CaptureError.self) { try detector.process(Self.frame(), time: 0) }
        let bgr = try PixelBuffer(width: 32, height: 32, pixelFormat: .bgr)
        #expect(throws: CaptureError.self) { try MotionDetector().process(bgr, time: 0) }
    }
}
