import CaptureKit
import Foundation
import Testing

/// Inputs that used to crash, hang or exhaust memory (issue #17, classes 2, 3, 4, 7 and 8).
@Suite struct InputRobustnessTests {
    /// A background far larger than the frame: its decoded image is a temporary, and a raw view
    /// of it used to outlive it (a segfault on 6000x6000, where the allocator unmaps at once).
    @Test func bigBackgroundImageIsScaledWithoutTouchingFreedMemory() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("big.png")
        try ImageFile.write(try PixelBuffer(width: 6000, height: 6000, pixelFormat: .bgr), to: path)
        let scene = SyntheticScene(size: .init(width: 64, height: 64), frameCount: 2, background: .image(path: path))
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        defer { source.close() }
        var frames = 0
        while let frame = try source.nextFrame(isCancelled: { false }) {
            #expect(frame.pixelBuffer.width == 64 && frame.pixelBuffer.height == 64)
            frames += 1
        }
        #expect(frames == 2)
    }
}
