@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

// The 2-D types besides QR on generated camera-sized frames, and what their gate (`SymbolCues`)
// does: the Data Matrix, Aztec and PDF417 fixtures (Tests/Fixtures/codes, 4 px per module) are
// turned, scaled and placed on the corpus's cluttered 640x480 backgrounds; code-free frames
// (fixture photos, noise, clutter) show how often a cue opens a read where there is nothing.

/// One generated frame: the symbol's type, payload, turn (degrees) and module size (pixels).
struct OtherTypeFrame {
    var type: MetadataObjectType
    var payload: [UInt8]
    var angle: Double
    var module: Double
    var frame: PixelBuffer
    /// Printed with its light and dark modules 38 levels apart (100 and 138) instead of ~255.
    var lowContrast = false
}

/// The fixture symbols: file, type, payload.
let otherTypeFixtures: [(String, MetadataObjectType, String)] = [
    ("datamatrix.png", .dataMatrix, "cvcam Data Matrix 1"),
    ("aztec.png", .aztec, "cvcam Aztec 1"),
    ("pdf417.png", .pdf417, "cvcam PDF417 1"),
]

/// Every fixture at turns 0, 5, 20, 45, 90 and 180° and modules of 2, 3 and 4.5 px, each at a
/// seeded place on its own background; `lowContrast`: its modules 38 levels apart.
@MainActor func otherTypeFrames(seed: UInt64, lowContrast: Bool = false) throws -> [OtherTypeFrame] {
    var out: [OtherTypeFrame] = []
    var rng = SplitMix64(seed: seed)
    for (file, type, text) in otherTypeFixtures {
        let printed = try QRTestCorpus.photo(at: root.appendingPathComponent("Tests/Fixtures/codes/\(file)").path)
        let gray = try CodeImaging.gray(printed)
        let source = lowContrast ? try CodeImaging.scaled(printed, alpha: 0.15, beta: 100) : printed
        // The symbol's box: its dark pixels (the fixture's frame is light gray).
        var x0 = gray.width, y0 = gray.height, x1 = 0, y1 = 0
        let p = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<gray.height {
            for x in 0..<gray.width where p[y * gray.bytesPerRow + x] < 128 {
                x0 = min(x0, x)
                y0 = min(y0, y)
                x1 = max(x1, x + 1)
                y1 = max(y1, y + 1)
            }
        }
        for angle in [0.0, 5, 20, 45, 90, 180] {
            for module in [2.0, 3, 4.5] {
                let frame = try QRTestCorpus.background(width: 640, height: 480, seed: rng.next())
                let scale = module / 4
                let w = Double(x1 - x0) * scale, h = Double(y1 - y0) * scale
                let reach = (w * w + h * h).squareRoot() / 2 + 12
                guard reach * 2 < 470 else { continue }
                let cx = rng.double(reach, 640 - reach), cy = rng.double(reach, 480 - reach)
                // The fixture's light quiet zone comes along: the symbol box plus 8 px of it.
                let pad = 8.0
                let (from, to) = Placement.turned(
                    CGRect(x: Double(x0) - pad, y: Double(y0) - pad, width: Double(x1 - x0) + 2 * pad, height: Double(y1 - y0) + 2 * pad),
                    scale: scale, degrees: angle, centre: CGPoint(x: cx, y: cy))
                let h2 = try CodeImaging.homography(from: from, to: to)
                try CodeImaging.warp(source, into: frame, homography: h2, interpolation: Interpolation.linear)
                try CodeImaging.addNoise(frame, seed: rng.next(), standardDeviation: 3)
                out.append(
                    OtherTypeFrame(
                        type: type, payload: Array(text.utf8), angle: angle, module: module, frame: frame, lowContrast: lowContrast))
            }
        }
    }
    return out
}

/// Prints the generated other-type frames beside the peers, and how often each cue fires on
/// code-free frames (`--other-types`).
@MainActor func runOtherTypes() throws {
    let types = CodeDetector.twoDimensionalTypes
    let gated = try CodeDetector(metadataObjectTypes: types, passes: cvcamPasses)
    var ungatedPasses = cvcamPasses
    ungatedPasses.typeGate = false
    let ungated = try CodeDetector(metadataObjectTypes: types, passes: ungatedPasses)
    let frames = try otherTypeFrames(seed: seed) + otherTypeFrames(seed: seed &+ 1, lowContrast: true)
    print("## Data Matrix, Aztec and PDF417 on generated 640x480 frames")
    print("")
    print("The fixtures of Tests/Fixtures/codes turned by 0, 5, 20, 45, 90 and 180° with modules of 2, 3 and 4.5 px on cluttered backgrounds, printed in full contrast and in low contrast (modules 100 and 138); exact payloads read. cvcam reads every 2-D type (the `scan` default); \"cue\" counts the frames whose finder looks saw that type's cue (the gate opens), \"ungated\" is cvcam with the gate off.")
    print("")
    print("| type | contrast | turn | frames | cue | cvcam | cvcam ungated | zxing-cpp 1.4 | zxing-cpp 3.x |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (_, type, _) in otherTypeFixtures {
        for low in [false, true] {
        for angle in [0.0, 5, 20, 45, 90, 180] {
            let set = frames.filter { $0.type == type && $0.angle == angle && $0.lowContrast == low }
            guard !set.isEmpty else { continue }
            var cue = 0, c = 0, u = 0, x = 0, x3 = 0
            for s in set {
                let before = gated.passCounts
                let codes = try gated.detections(in: s.frame)
                let after = gated.passCounts
                let opened: Int
                switch type {
                case .aztec: opened = after.aztecCues - before.aztecCues
                case .pdf417: opened = after.pdf417Cues - before.pdf417Cues
                default: opened = after.dataMatrixCues - before.dataMatrixCues
                }
                cue += opened
                if codes.contains(where: { $0.type == type && $0.payload == s.payload }) {
                    c += 1
                } else if let dir = saveMissesPath {
                    // The frame cvcam missed, for `--read TYPES PATH`; a line says whether a cue opened it.
                    let name = "\(type.rawValue)-\(low ? "faint" : "full")-\(Int(angle))deg-\(f(s.module))px"
                    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                    try ImageFile.write(s.frame, to: dir + "/" + name + ".png")
                    print("miss \(name): \(opened > 0 ? "cue opened the read" : "no cue")")
                }
                if try ungated.detections(in: s.frame).contains(where: { $0.type == type && $0.payload == s.payload }) { u += 1 }
                let gray = try CodeImaging.gray(s.frame)
                if let r = zxing14Child.read(gray, formats: "all"), r.codes.contains(where: { $0.bytes == s.payload }) { x += 1 }
                if let r = zxing3?.read(gray, formats: "all"), r.codes.contains(where: { $0.bytes == s.payload }) { x3 += 1 }
            }
            print("| \(type.rawValue) | \(low ? "low" : "full") | \(Int(angle))° | \(set.count) | \(cue) | \(c) | \(u) | \(x) | \(zxing3 == nil ? "–" : String(x3)) |")
        }
        }
    }
    print("")
    print("Cues on code-free frames (frames where a cue opened zxing-cpp's read of that type):")
    print("")
    print("| frames | count | Aztec | PDF417 | Data Matrix |")
    print("|---|---:|---:|---:|---:|")
    for (w, h) in [(640, 480), (1280, 720)] {
        var sets: [(String, [PixelBuffer])] = [("noise, clutter", try noiseFrames(width: w, height: h))]
        sets.append(("fixture photos", try photoPaths.map { p throws(CaptureError) in try QRTestCorpus.photo(at: p, width: w, height: h) }))
        for (name, set) in sets {
            let before = gated.passCounts
            for f in set { _ = try gated.detections(in: f) }
            let after = gated.passCounts
            print("| \(w)x\(h) \(name) | \(set.count) | \(after.aztecCues - before.aztecCues) | \(after.pdf417Cues - before.pdf417Cues) | \(after.dataMatrixCues - before.dataMatrixCues) |")
        }
    }
    print("")
}
