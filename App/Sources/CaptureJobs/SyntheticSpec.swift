import CaptureKit
import Foundation

/// Parses `synthetic:SPEC` (see `--input` help) into a `SyntheticScene`.
///
/// Images move left to right across the frame at `speed` pixels per second, each a third of the
/// frame's height, one below the other, entering at `appear` seconds and again every `repeat`
/// seconds (a person passing); QR codes stay still, side by side across the middle.
package enum SyntheticSpec {
    package static func parse(_ spec: String) throws -> SyntheticScene {
        var size = CaptureDevice.Dimensions(width: 640, height: 480)
        var fps = 30.0
        var frames: Int?
        var background = SyntheticScene.Background.colorBars
        var images: [String] = []
        var codes: [String] = []
        var speed = 120.0
        var appear = 0.0
        var again: Double?
        for item in spec.split(separator: ",", omittingEmptySubsequences: true) {
            let pair = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw CLIError.message("synthetic: '\(item)' is not key=value") }
            let (key, value) = (pair[0], pair[1])
            switch key {
            case "size":
                guard let s = InputOptions.parseSize(value) else {
                    throw CLIError.message("synthetic: size must be WxH, each side 1 to 16384 (got '\(value)')")
                }
                size = s
            case "fps":
                fps = try number(value, OptionRange.framesPerSecond, key)
            case "frames":
                guard let v = Int(value) else { throw CLIError.message("synthetic: frames must be a whole number (got '\(value)')") }
                try OptionRange.check(v, 1...100_000_000, "synthetic: frames")
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
            case "qr":
                // The largest QR code (version 40, low correction) holds 2953 bytes.
                guard value.utf8.count <= 2953 else {
                    throw CLIError.message("synthetic: qr holds at most 2953 bytes (got \(value.utf8.count))")
                }
                codes.append(value)
            case "speed":
                speed = try number(value, -100_000...100_000, key, unit: " pixels per second")
            case "appear":
                appear = try number(value, OptionRange.seconds, key, unit: " seconds")
            case "repeat":
                again = try number(value, OptionRange.positiveSeconds, key, unit: " seconds")
            default:
                throw CLIError.message(
                    "synthetic: unknown key '\(key)'; use size, fps, frames, background, image, qr, speed, appear, repeat")
            }
        }
        var sprites: [SyntheticScene.Sprite] = []
        let side = size.height / 3
        for (i, path) in images.enumerated() {
            sprites.append(
                .init(
                    content: .image(path: path), size: .init(width: side, height: side),
                    origin: CGPoint(x: -Double(side), y: Double((i * side) % max(1, size.height - side))),
                    velocity: CGSize(width: speed, height: 0), appearsAt: appear, repeatInterval: again))
        }
        let codeSide = min(size.height / 2, size.width / max(1, codes.count) - 10)
        // A sprite needs a positive size: a QR code at least its 21 modules, an image one pixel.
        guard codes.isEmpty || codeSide >= 21 else {
            throw CLIError.message("synthetic: \(codes.count) qr code(s) do not fit in a \(size) frame; use a larger size or fewer codes")
        }
        guard images.isEmpty || side >= 1 else {
            throw CLIError.message("synthetic: image needs a frame at least 3 pixels high (got \(size))")
        }
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

    /// A number for `key`, range-checked like an option.
    private static func number(_ text: String, _ range: ClosedRange<Double>, _ key: String, unit: String = "") throws -> Double {
        guard let v = Double(text) else { throw CLIError.message("synthetic: \(key) must be a number (got '\(text)')") }
        try OptionRange.check(v, range, "synthetic: \(key)", unit: unit)
        return v
    }
}
