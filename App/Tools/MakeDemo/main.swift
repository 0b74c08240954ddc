// cvcam-make-demo: writes the bundled demo clip, deterministically, from the fixture photos in
// Tests/Fixtures/faces and QR codes drawn by OpenCV's QRCodeEncoder.
//
//   cvcam-make-demo [OUTPUT.avi] [--fixtures DIR]
//
// The clip (1280x720, 15 fps, 10 s, MJPEG-in-AVI):
//   0.0-4.0 s  the astronaut portrait moves left to right
//   1.0-5.0 s  QR "https://cvcam.example/checkin?id=4711" held still, upper right
//   4.5-9.5 s  Grace Hopper's portrait drifts up from the bottom left
//   6.0-9.0 s  QR "CVCAM-DEMO-2" and, inverted (light on dark), QR "inverted code" side by side
//   9.5-10 s   nothing but the background
import CaptureKit
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
var output = "demo.avi"
var fixtures: String?
var index = 0
while index < arguments.count {
    switch arguments[index] {
    case "--fixtures":
        index += 1
        fixtures = index < arguments.count ? arguments[index] : nil
    case "-h", "--help":
        print("usage: cvcam-make-demo [OUTPUT.avi] [--fixtures DIR]")
        exit(0)
    default:
        output = arguments[index]
    }
    index += 1
}

/// The fixture folder: given, or found above this executable or the working directory.
@MainActor func locateFixtures() -> String? {
    if let fixtures { return fixtures }
    var candidates = [FileManager.default.currentDirectoryPath]
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path)
    for start in candidates {
        var url = URL(fileURLWithPath: start)
        while url.path != "/" {
            let probe = url.appendingPathComponent("Tests/Fixtures/faces/images")
            if FileManager.default.fileExists(atPath: probe.path) { return probe.path }
            url.deleteLastPathComponent()
        }
    }
    return nil
}

guard let images = locateFixtures() else {
    FileHandle.standardError.write(Data("cvcam-make-demo: cannot find Tests/Fixtures/faces/images; pass --fixtures DIR\n".utf8))
    exit(1)
}

/// Writes an inverted (light-on-dark) QR symbol to a PNG: synthetic sprites take image files.
func invertedQRCodeFile(_ text: String, to path: String) throws {
    let code = try QRCodeImage.make(payload: Array(text.utf8), correction: 1, moduleSize: 1)
    let inverted = try PixelBuffer(width: code.width, height: code.height, pixelFormat: .bgr)
    for y in 0..<code.height {
        for x in 0..<code.width {
            let v = 255 - code.pixel(x: x, y: y)[0]
            let p = inverted.baseAddress + y * inverted.bytesPerRow + x * 3
            p.storeBytes(of: v, toByteOffset: 0, as: UInt8.self)
            p.storeBytes(of: v, toByteOffset: 1, as: UInt8.self)
            p.storeBytes(of: v, toByteOffset: 2, as: UInt8.self)
        }
    }
    try ImageFile.write(inverted, to: path)
}

do {
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-demo-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let invertedPath = work.appendingPathComponent("inverted.png").path
    try invertedQRCodeFile("inverted code", to: invertedPath)

    let scene = SyntheticScene(
        size: .init(width: 1280, height: 720), frameRate: 15, frameCount: 150,
        background: .color(red: 96, green: 112, blue: 128),
        sprites: [
            .init(
                content: .image(path: images + "/astronaut.png"), size: .init(width: 320, height: 320),
                origin: CGPoint(x: 40, y: 200), velocity: CGSize(width: 180, height: 0), appearsAt: 0, disappearsAt: 4),
            .init(
                content: .qrCode(payload: Array("https://cvcam.example/checkin?id=4711".utf8), correction: 1),
                size: .init(width: 240, height: 240), origin: CGPoint(x: 980, y: 40), appearsAt: 1, disappearsAt: 5),
            .init(
                content: .image(path: images + "/grace_hopper.jpg"), size: .init(width: 256, height: 300),
                origin: CGPoint(x: 120, y: 400), velocity: CGSize(width: 0, height: -40), appearsAt: 4.5,
                disappearsAt: 9.5),
            .init(
                content: .qrCode(payload: Array("CVCAM-DEMO-2".utf8), correction: 2), size: .init(width: 200, height: 200),
                origin: CGPoint(x: 640, y: 260), appearsAt: 6, disappearsAt: 9),
            .init(
                content: .image(path: invertedPath), size: .init(width: 200, height: 200),
                origin: CGPoint(x: 900, y: 260), appearsAt: 6, disappearsAt: 9),
        ])
    let dir = (output as NSString).deletingLastPathComponent
    if !dir.isEmpty { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
    let frames = try scene.writeClip(to: output)
    print("wrote \(output): \(frames) frames, 1280x720 @ 15 fps")
} catch {
    FileHandle.standardError.write(Data("cvcam-make-demo: \(error)\n".utf8))
    exit(1)
}
