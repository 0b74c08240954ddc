import CVBridge
@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

/// `--small-turned`: QR codes of 2-px modules turned a few degrees on a plain surface with a
/// camera's sensor noise (σ 3), one per 640x480 frame, versions 2–10: sampled and thresholded,
/// their finders' one-module rings are 1–3 px on any row.
@MainActor func runSmallTurned() throws {
    let detector = try CodeDetector(metadataObjectTypes: [.qr], passes: cvcamPasses)
    let r = try readBesidePeer(try QRTestCorpus.smallTurnedCodes(), detector: detector)
    print("QR codes of 2-px modules turned 3–30° (versions 2–10, σ 3 noise, 640x480): cvcam \(r.read) of \(r.frames), zxing-cpp 3.x \(r.peer.map(String.init) ?? "–"); cvcam missed: \(r.missed.joined(separator: ", "))")
}

/// `--framed-faint`: faint QR codes (modules 40 levels apart) in a bright surround two modules
/// beyond their edge (`QRTestCorpus.framedFaintCodes`), cvcam beside zxing-cpp 3.x.
@MainActor func runFramedFaint() throws {
    let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes, passes: cvcamPasses)
    let r = try readBesidePeer(try QRTestCorpus.framedFaintCodes(), detector: detector)
    print("Faint QR codes in a bright surround (modules 60/100, quiet zone 2 modules, surround 235, σ 3 noise): cvcam (every 2-D type) \(r.read) of \(r.frames), zxing-cpp 3.x \(r.peer.map(String.init) ?? "–"); cvcam missed: \(r.missed.joined(separator: ", ")); zxing-cpp 3.x missed: \(r.peerMissed.joined(separator: ", "))")
}

/// Each frame read by `detector` and by zxing-cpp 3.x (QR only; `peer` nil when it is not
/// measured): how many each read with the exact payload, and the names of the frames each missed.
@MainActor func readBesidePeer(
    _ frames: [(name: String, frame: PixelBuffer, payload: [UInt8])], detector: CodeDetector
) throws -> (read: Int, peer: Int?, frames: Int, missed: [String], peerMissed: [String]) {
    var read = 0, peer = 0
    var missed: [String] = [], peerMissed: [String] = []
    for (name, frame, payload) in frames {
        if try detector.detections(in: frame).contains(where: { $0.payload == payload }) { read += 1 } else { missed.append(name) }
        if let z3 = zxing3, let r = z3.read(frame, formats: "QRCode") {
            if r.codes.contains(where: { $0.bytes == payload }) { peer += 1 } else { peerMissed.append(name) }
        }
    }
    return (read, zxing3 == nil ? nil : peer, frames.count, missed, peerMissed)
}
