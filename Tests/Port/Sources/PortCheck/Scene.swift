import CaptureKit
import Foundation

/// The synthetic camera the port check runs on (the camera `CaptureDevice.default(for:)` would
/// find on a phone): two face photos and a QR code on a grey background, endless, in real time.
/// The photos come from the repository's face fixtures; `PortCheck.fixtures` says where they are.
extension SyntheticScene {
    /// The payload of the QR code in the scene.
    static let portCheckPayload = "cvcam port check"

    static var portCheck: SyntheticScene {
        let images = PortCheck.fixtures
        return SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 15,
            background: .color(red: 120, green: 120, blue: 120),
            sprites: [
                .init(
                    content: .image(path: images.appendingPathComponent("grace_hopper.jpg").path),
                    size: .init(width: 240, height: 280), origin: CGPoint(x: 20, y: 100)),
                .init(
                    content: .image(path: images.appendingPathComponent("astronaut.png").path),
                    size: .init(width: 200, height: 200), origin: CGPoint(x: 270, y: 20)),
                .init(
                    content: .qrCode(payload: Array(portCheckPayload.utf8), correction: 1),
                    size: .init(width: 180, height: 180), origin: CGPoint(x: 440, y: 280)),
            ])
    }
}
