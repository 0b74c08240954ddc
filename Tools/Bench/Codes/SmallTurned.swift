import CVBridge
@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

/// `--small-turned`: QR codes of 2-px modules turned a few degrees on a plain surface with a
/// camera's sensor noise (σ 3), one per 640x480 frame, versions 2–10: sampled and thresholded,
/// their finders' one-module rings are 1–3 px on any row.
@MainActor func runSmallTurned() throws {
    let versions: [Int32] = [2, 3, 4, 5, 6, 7, 8, 10]
    let angles: [Double] = [3, 5, 8, 12, 20, 30]
    let detector = try CodeDetector(metadataObjectTypes: [.qr], passes: cvcamPasses)
    var read = 0, peer = 0, frames = 0
    var missed: [String] = []
    for version in versions {
        for angle in angles {
            let payload = Array("cvcam \(version) 2 \(angle)".utf8)
            let symbol = try CodeImaging.gray(try QRCodeImage.make(payload: payload, version: version, moduleSize: 2))
            let frame = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
            try Imaging.fill(frame, x: 0, y: 0, width: 640, height: 480, red: 235, green: 235, blue: 235, "frame")
            let a = angle * Double.pi / 180
            let w = Double(symbol.width), h = Double(symbol.height)
            let from = [CGPoint(x: 0, y: 0), CGPoint(x: w, y: 0), CGPoint(x: w, y: h), CGPoint(x: 0, y: h)]
            let to = from.map { p in
                let u = p.x - w / 2, v = p.y - h / 2
                return CGPoint(x: 320 + u * cos(a) - v * sin(a), y: 240 + u * sin(a) + v * cos(a))
            }
            try CodeImaging.warp(symbol, into: frame, homography: try CodeImaging.homography(from: from, to: to))
            try CodeImaging.addNoise(frame, seed: UInt64(version) * 100 + UInt64(angle), standardDeviation: 3)
            frames += 1
            let ok = try detector.detections(in: frame).contains { $0.payload == payload }
            if ok { read += 1 } else { missed.append("v\(version) \(Int(angle))°") }
            if let z3 = zxing3, let r = z3.read(frame, formats: "QRCode") { peer += r.codes.contains { $0.bytes == payload } ? 1 : 0 }
        }
    }
    print("QR codes of 2-px modules turned 3–30° (versions 2–10, σ 3 noise, 640x480): cvcam \(read) of \(frames), zxing-cpp 3.x \(zxing3 == nil ? "–" : String(peer)); cvcam missed: \(missed.joined(separator: ", "))")
}
