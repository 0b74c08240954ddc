import CaptureKit
import Foundation

/// A video file whose timeline is known, for the event-clip tests: a grey scene at 10 fps with a
/// red marker that moves `markerSpeed` pixels a second along the top edge (so a frame read back
/// from a clip tells when it was taken) and a QR code of `payload` in view from `codeAppears`
/// to `codeLeaves` (its last frame is the one before `codeLeaves`).
package struct ClipTestScene: Sendable {
    package static let frameRate = 10.0
    package static let frame = 1 / frameRate
    package static let markerSpeed = 36.0

    package var payload = "CLIP-DOOR-7"
    package var codeAppears = 2.0
    package var codeLeaves = 3.5
    package var seconds = 6.0

    package init() {}

    /// The last frame time the code is in.
    package var codeLastSeen: Double { codeLeaves - Self.frame }

    package var scene: SyntheticScene {
        SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: Self.frameRate, frameCount: Int((seconds * Self.frameRate).rounded()),
            background: .color(red: 110, green: 120, blue: 130),
            sprites: [
                .init(
                    content: .color(red: 250, green: 20, blue: 20), size: .init(width: 8, height: 8), origin: CGPoint(x: 0, y: 2),
                    velocity: CGSize(width: Self.markerSpeed, height: 0)),
                .init(
                    content: .qrCode(payload: Array(payload.utf8), correction: 1), size: .init(width: 132, height: 132),
                    origin: CGPoint(x: 120, y: 60), appearsAt: codeAppears, disappearsAt: codeLeaves),
            ])
    }

    /// Writes the scene as a Motion-JPEG AVI (OpenCV's writer) at `url`.
    package func writeVideo(to url: URL) throws {
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: Self.frameRate))
        defer { source.close() }
        let writer = try VideoFileWriter(path: url.path, frameRate: Self.frameRate, dimensions: scene.size)
        defer { writer.close() }
        while let frame = try source.nextFrame(isCancelled: { false }) { try writer.write(frame.pixelBuffer) }
    }

    /// A JPEG decoded (through a temporary file, as the image reader reads files).
    package static func decode(_ jpeg: Data) throws -> PixelBuffer {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-clipframe-\(UUID().uuidString).jpg")
        try jpeg.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try ImageFolderSource.decode(url.path)
    }

    /// When a frame of the scene was taken, read from where its marker is, to the nearest frame.
    package static func markerTime(_ jpeg: Data) throws -> Double {
        let image = try decode(jpeg)
        for x in 0..<image.width {
            let p = image.pixel(x: x, y: 6)  // BGR
            if p[2] > 180 && p[1] < 90 && p[0] < 90 { return (Double(x) / markerSpeed * frameRate).rounded() / frameRate }
        }
        throw CaptureError(.decodeFailed, "no marker in the frame")
    }

    /// Every frame of a clip file, read back with the clip reader.
    package static func frames(of url: URL) throws -> [Data] {
        let reader = try MJPEGAVIReader(path: url.path)
        var frames: [Data] = []
        while let jpeg = reader.nextFrame() { frames.append(jpeg) }
        return frames
    }

    /// The QR codes CaptureKit's code reader finds in a JPEG.
    package static func codes(in jpeg: Data) throws -> [String] {
        try CodeDetector(metadataObjectTypes: [.qr]).detections(in: decode(jpeg)).compactMap(\.stringValue)
    }
}
