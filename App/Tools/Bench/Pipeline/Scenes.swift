import CaptureKit
import Foundation

/// The benchmark's scenes, laid out in fractions of the frame so every resolution shows the same
/// picture: up to five face photos from Tests/Fixtures/faces in a row across the upper half,
/// drifting right at 1 % of the width per second, and up to three still QR codes across the
/// lower half, over a seeded noise background (texture, like a real room, for ZBar to reject).
enum BenchScenes {
    /// Single-face, frontal fixture photos and their height/width ratio.
    static let facePhotos: [(file: String, aspect: Double)] = [
        ("astronaut.png", 1.0), ("grace_hopper.jpg", 600.0 / 512), ("maksssksksss239.jpg", 400.0 / 301),
        ("maksssksksss154.jpg", 400.0 / 301), ("maksssksksss544.jpg", 400.0 / 301),
    ]
    static let faceWidth = 0.18
    static let codeWidth = 0.13

    /// The payload of code `index` (1-based) in the throughput scenes.
    static func codePayload(_ index: Int) -> String { "CVCAM-BENCH-\(index)" }

    /// The throughput/latency scene: `faces` photos and `codes` QR codes at `size`, 30 fps.
    static func scene(
        size: CaptureDevice.Dimensions, faces: Int, codes: Int, frames: Int, fixtures: String
    ) -> SyntheticScene {
        let w = Double(size.width)
        let h = Double(size.height)
        var sprites: [SyntheticScene.Sprite] = []
        for i in 0..<min(faces, facePhotos.count) {
            let photo = facePhotos[i]
            let sw = w * faceWidth
            sprites.append(
                .init(
                    content: .image(path: fixtures + "/" + photo.file),
                    size: .init(width: Int(sw), height: Int(sw * photo.aspect)),
                    origin: CGPoint(x: w * (0.01 + 0.195 * Double(i)), y: h * 0.04),
                    velocity: CGSize(width: w * 0.01, height: 0)))
        }
        let codeX = [0.08, 0.42, 0.76]
        for i in 0..<min(codes, codeX.count) {
            let side = Int(w * codeWidth)
            sprites.append(
                .init(
                    content: .qrCode(payload: Array(codePayload(i + 1).utf8), correction: 1),
                    size: .init(width: side, height: side), origin: CGPoint(x: w * codeX[i], y: h * 0.6)))
        }
        return SyntheticScene(
            size: size, frameRate: 30, frameCount: frames,
            background: .noise(seed: 7, mean: 112, standardDeviation: 14), sprites: sprites)
    }

    /// One appearance of a face or a code in the soak scene's cycle.
    struct Appearance: Sendable {
        enum Kind: String, Sendable { case face, code }
        var kind: Kind
        /// The code's payload (codes only).
        var payload: String?
        var appearsAt: Double
        var disappearsAt: Double
    }

    /// The soak scene's cycle: 12 s at 30 fps, 1280x720, two face appearances and two code
    /// appearances with gaps of at least 3 s between appearances of the same kind (long enough
    /// for a track to end).
    static let soakCycleSeconds = 12.0
    static let soakAppearances: [Appearance] = [
        .init(kind: .face, payload: nil, appearsAt: 0.5, disappearsAt: 3.5),
        .init(kind: .code, payload: "SOAK-A", appearsAt: 2.0, disappearsAt: 4.5),
        .init(kind: .face, payload: nil, appearsAt: 6.5, disappearsAt: 9.5),
        .init(kind: .code, payload: "SOAK-B", appearsAt: 8.0, disappearsAt: 10.5),
    ]

    static func soakCycle(fixtures: String) -> SyntheticScene {
        let size = CaptureDevice.Dimensions(width: 1280, height: 720)
        let faceOrigins = [CGPoint(x: 100, y: 60), CGPoint(x: 700, y: 60)]
        let photos = [facePhotos[0], facePhotos[1]]
        var faceIndex = 0
        var sprites: [SyntheticScene.Sprite] = []
        for a in soakAppearances {
            switch a.kind {
            case .face:
                let photo = photos[faceIndex % photos.count]
                let sw = 1280 * faceWidth
                sprites.append(
                    .init(
                        content: .image(path: fixtures + "/" + photo.file),
                        size: .init(width: Int(sw), height: Int(sw * photo.aspect)), origin: faceOrigins[faceIndex % 2],
                        velocity: CGSize(width: 20, height: 0), appearsAt: a.appearsAt, disappearsAt: a.disappearsAt))
                faceIndex += 1
            case .code:
                sprites.append(
                    .init(
                        content: .qrCode(payload: Array((a.payload ?? "").utf8), correction: 1),
                        size: .init(width: 180, height: 180), origin: CGPoint(x: 900, y: 420), appearsAt: a.appearsAt,
                        disappearsAt: a.disappearsAt))
            }
        }
        return SyntheticScene(
            size: size, frameRate: 30, frameCount: Int(soakCycleSeconds * 30),
            background: .noise(seed: 11, mean: 112, standardDeviation: 14), sprites: sprites)
    }

    /// Tests/Fixtures/faces/images, found above the working directory or this executable.
    static func locateFixtures(_ explicit: String?) -> String? {
        if let explicit { return explicit }
        for start in [FileManager.default.currentDirectoryPath, CommandLine.arguments[0]] {
            var url = URL(fileURLWithPath: start)
            while url.path != "/" {
                let probe = url.appendingPathComponent("Tests/Fixtures/faces/images")
                if FileManager.default.fileExists(atPath: probe.path) { return probe.path }
                url.deleteLastPathComponent()
            }
        }
        return nil
    }
}
