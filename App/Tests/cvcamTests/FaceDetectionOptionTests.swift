import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// `--face-detection`: parsed by every face command, and it really picks the detector the
/// metadata output runs (the built binary on a 1920x1080 image with one small face).
@Suite struct FaceDetectionOptionTests {
    @Test func everyFaceCommandTakesTheModeAndDefaultsByInput() throws {
        let camera = try Faces.parse([])
        #expect(camera.faceOptions.faceDetection == nil)
        #expect(camera.faceOptions.detection(for: camera.input) == .realtime)
        let video = try Faces.parse(["--input", "synthetic:frames=1"])
        #expect(video.faceOptions.detection(for: video.input) == .realtime)
        let photos = try Faces.parse(["--input", CLI.fixture("images")])
        #expect(photos.faceOptions.detection(for: photos.input) == .standard)
        let photo = try Faces.parse(["--input", CLI.fixture("images/grace_hopper.jpg")])
        #expect(photo.faceOptions.detection(for: photo.input) == .standard)
        let forced = try Faces.parse(["--input", CLI.fixture("images"), "--face-detection", "realtime"])
        #expect(forced.faceOptions.detection(for: forced.input) == .realtime)
        #expect(try Faces.parse(["--face-detection", "standard"]).faceOptions.faceDetection == .standard)
        #expect(try Watch.parse(["--dir", "shots", "--face-detection", "tiled"]).faceOptions.faceDetection == .tiled)
        #expect(try Snap.parse(["-o", "a.jpg", "--face-detection", "standard"]).faceOptions.faceDetection == .standard)
        do {
            _ = try Faces.parseAsRoot(["--face-detection", "fast"])
            Issue.record("expected a validation error")
        } catch {
            let message = Faces.message(for: error)
            #expect(message.contains("realtime") && message.contains("standard") && message.contains("tiled"), "\(message)")
        }
    }

    @Test func theScanIntervalIsParsedCheckedAndGivenToTheOutput() throws {
        let faces = try Faces.parse([])
        #expect(try faces.faceOptions.faceOutput(for: faces.input).faceScanInterval == 0.1)
        let every = try Snap.parse(["-o", "a.jpg", "--face-scan-interval", "0"])
        #expect(try every.faceOptions.faceOutput(for: every.input).faceScanInterval == 0)
        #expect(try Watch.parse(["--dir", "shots", "--face-scan-interval", "0.5"]).faceOptions.faceScanInterval == 0.5)
        do {
            _ = try Faces.parseAsRoot(["--face-scan-interval", "-1"])
            Issue.record("expected a validation error")
        } catch {
            #expect(Faces.message(for: error).contains("--face-scan-interval"), "\(Faces.message(for: error))")
        }
    }

    /// A face 20 px wide in a 1920x1080 image: 7 px once `realtime` scales the frame to
    /// 640x360, too small for YuNet; `standard`, the default for images, runs at the frame's
    /// own size and finds it.
    @Test func theImageDefaultFindsATwentyPixelFaceRealtimeGivesUp() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // grace_hopper.jpg's face box is 176,121 181×211 in its 512×600 pixels.
        let (sprite, face) = SyntheticScene.Sprite.image(
            path: CLI.fixture("images/grace_hopper.jpg"), imageSize: .init(width: 512, height: 600),
            placing: CGRect(x: 176, y: 121, width: 181, height: 211), width: 20, centredAt: CGPoint(x: 576, y: 378))
        let scene = SyntheticScene(
            size: .init(width: 1920, height: 1080), background: .image(path: CLI.fixture("negatives/rocket.jpg")),
            sprites: [sprite])
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: 30))
        let frame = try #require(try source.nextFrame(isCancelled: { false })).pixelBuffer
        source.close()
        try ImageFile.write(frame, to: folder.appendingPathComponent("small-face.png").path)

        func enteredBoxes(_ extra: [String]) throws -> [CGRect] {
            let result = try CLI.run(["faces", "--input", folder.path, "--json"] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            return try result.lines.compactMap { line -> CGRect? in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard object["event"] as? String == "enter", let box = object["box"] as? [String: Double],
                    let x = box["x"], let y = box["y"], let w = box["w"], let h = box["h"]
                else { return nil }
                return CGRect(x: x * 1920, y: y * 1080, width: w * 1920, height: h * 1080)
            }
        }
        #expect(try enteredBoxes(["--face-detection", "realtime"]).isEmpty)
        let standard = try enteredBoxes([])
        #expect(standard.count == 1)
        #expect(standard.contains { $0.intersectionOverUnion(face) >= 0.5 }, "\(standard)")
    }
}
