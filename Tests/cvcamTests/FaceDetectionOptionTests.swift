import CaptureKit
import Foundation
import Testing

@testable import cvcam

/// `--face-detection`: parsed by every face command, and it really picks the detector the
/// metadata output runs (the built binary on a 1280x720 image with one small face).
@Suite struct FaceDetectionOptionTests {
    @Test func everyFaceCommandTakesTheModeAndDefaultsToRealtime() throws {
        #expect(try Faces.parse([]).faceOptions.faceDetection == .realtime)
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
        let full = CGRect(x: 0, y: 0, width: 1, height: 1)
        #expect(try Faces.parse([]).faceOptions.faceOutput(regionOfInterest: full).faceScanInterval == 0.1)
        let every = try Snap.parse(["-o", "a.jpg", "--face-scan-interval", "0"]).faceOptions
        #expect(try every.faceOutput(regionOfInterest: full).faceScanInterval == 0)
        #expect(try Watch.parse(["--dir", "shots", "--face-scan-interval", "0.5"]).faceOptions.faceScanInterval == 0.5)
        do {
            _ = try Faces.parseAsRoot(["--face-scan-interval", "-1"])
            Issue.record("expected a validation error")
        } catch {
            #expect(Faces.message(for: error).contains("--face-scan-interval"), "\(Faces.message(for: error))")
        }
    }

    /// A face 16 px wide in a 1280x720 image: 8 px once the default scales the frame to
    /// 640x360, too small for YuNet; `standard` runs at the frame's own size and finds it.
    @Test func standardFindsASixteenPixelFaceTheRealtimeDefaultGivesUp() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // grace_hopper.jpg's face box is 176,121 181×211 in its 512×600 pixels.
        let (sprite, face) = SyntheticScene.Sprite.image(
            path: CLI.fixture("images/grace_hopper.jpg"), imageSize: .init(width: 512, height: 600),
            placing: CGRect(x: 176, y: 121, width: 181, height: 211), width: 16, centredAt: CGPoint(x: 384, y: 252))
        let scene = SyntheticScene(
            size: .init(width: 1280, height: 720), background: .image(path: CLI.fixture("negatives/rocket.jpg")),
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
                return CGRect(x: x * 1280, y: y * 720, width: w * 1280, height: h * 720)
            }
        }
        #expect(try enteredBoxes([]).isEmpty)
        let standard = try enteredBoxes(["--face-detection", "standard"])
        #expect(standard.count == 1)
        #expect(standard.contains { $0.intersectionOverUnion(face) >= 0.5 }, "\(standard)")
    }
}
