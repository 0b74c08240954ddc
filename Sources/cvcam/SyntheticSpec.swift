import CaptureKit
import Foundation

/// Parses `synthetic:SPEC` (see `--input` help) into a `SyntheticScene`.
///
/// Images move left to right across the frame at `speed` pixels per second, each a third of the
/// frame's height, one below the other; QR codes stay still, side by side across the middle.
enum SyntheticSpec {
    static func parse(_ spec: String) throws -> SyntheticScene {
        var size = CaptureDevice.Dimensions(width: 640, height: 480)
        var fps = 30.0
        var frames: Int?
        var background = SyntheticScene.Background.colorBars
        var images: [String] = []
        var codes: [String] = []
        var speed = 120.0
        for item in spec.split(separator: ",", omittingEmptySubsequences: true) {
            let pair = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw CLIError.message("synthetic: '\(item)' is not key=value") }
            let (key, value) = (pair[0], pair[1])
            switch key {
            case "size":
                guard let s = InputOptions.parseSize(value) else { throw CLIError.message("synthetic: size must be WxH") }
                size = s
            case "fps":
                guard let v = Double(value), v > 0 else { throw CLIError.message("synthetic: fps must be above 0") }
                fps = v
            case "frames":
                guard let v = Int(value), v > 0 else { throw CLIError.message("synthetic: frames must be above 0") }
                frames = v
            case "background":
                switch value {
                case "bars": background = .colorBars
                case "noise": background = .noise(seed: 1, mean: 128, standardDeviation: 40)
                case "black": background = .color(red: 0, green: 0, blue: 0)
                case "gray": background = .color(red: 128, green: 128, blue: 128)
                default: background = .image(path: value)
                }
            case "image": images.append(value)
            case "qr": codes.append(value)
            case "speed":
                guard let v = Double(value) else { throw CLIError.message("synthetic: speed must be a number") }
                speed = v
            default:
                throw CLIError.message(
                    "synthetic: unknown key '\(key)'; use size, fps, frames, background, image, qr, speed")
            }
        }
        var sprites: [SyntheticScene.Sprite] = []
        let side = size.height / 3
        for (i, path) in images.enumerated() {
            sprites.append(
                .init(
                    content: .image(path: path), size: .init(width: side, height: side),
                    origin: CGPoint(x: -Double(side), y: Double((i * side) % max(1, size.height - side))),
                    velocity: CGSize(width: speed, height: 0)))
        }
        let codeSide = min(size.height / 2, size.width / max(1, codes.count) - 10)
        for (i, text) in codes.enumerated() {
            let x = (size.width / max(1, codes.count)) * i + 5
            sprites.append(
                .init(
                    content: .qrCode(payload: Array(text.utf8), correction: 1),
                    size: .init(width: codeSide, height: codeSide),
                    origin: CGPoint(x: Double(x), y: Double((size.height - codeSide) / 2))))
        }
        return SyntheticScene(size: size, frameRate: fps, frameCount: frames, background: background, sprites: sprites)
    }
}
