import CaptureKit
import CaptureKitTesting
import Dispatch
import Foundation

/// Paths into the repository, found from this file's location.
enum Fixtures {
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()
    static let faces = packageRoot.appendingPathComponent("Tests/Fixtures/faces")
    static func faceImage(_ name: String) -> String { faces.appendingPathComponent("images/\(name)").path }
    static func negative(_ name: String) -> String { faces.appendingPathComponent("negatives/\(name)").path }
    /// Every face fixture photo, with faces and without, in name order: code-free frames.
    static func facePhotoPaths() throws -> [String] {
        try ["images", "negatives"].flatMap { dir in
            let url = faces.appendingPathComponent(dir)
            return try FileManager.default.contentsOfDirectory(atPath: url.path).sorted().map { url.appendingPathComponent($0).path }
        }
    }
}

/// A scene with a QR code sprite moving right at 100 px/s over colour bars.
func movingScene(width: Int = 320, height: Int = 240, fps: Double = 30, frames: Int? = 30) -> SyntheticScene {
    SyntheticScene(
        size: .init(width: width, height: height), frameRate: fps, frameCount: frames, background: .colorBars,
        sprites: [
            .init(
                content: .qrCode(payload: Array("cvcam".utf8), correction: 1), size: .init(width: 84, height: 84),
                origin: CGPoint(x: 10, y: 20), velocity: CGSize(width: 100, height: 0))
        ])
}

/// A session over `device` with one video data output delivering to `recorder`.
func makeSession(
    device: CaptureDevice, recorder: FrameRecorder, discardsLate: Bool = true, format: PixelFormat? = .bgr
) throws -> (CaptureSession, CaptureVideoDataOutput) {
    let session = CaptureSession()
    try session.addInput(try CaptureDeviceInput(device: device))
    let output = CaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = discardsLate
    output.videoPixelFormat = format
    output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "test.delegate"))
    try session.addOutput(output)
    return (session, output)
}

func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
