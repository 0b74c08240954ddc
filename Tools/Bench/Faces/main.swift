// bench-faces: cvcam's FaceDetector beside plain YuNet (2022mar, YuNet-n and YuNet-s 2023, each at
// its best threshold) and the plain Haar cascade, measured in the same run on the same images:
// first the two real-photo splits (../shared/devsets/faces to tune on, ../shared/devsets/faces-validate
// to check; each skipped with a message when absent),
// then the fixtures plus generated face-free frames, per-frame cost at 640x480 and 1280x720, and
// the smallest face found reliably at each preset size.
//
// Run it with Tools/bench-faces (release build). Prints Markdown. Options: --devset DIR (the
// tuning split), --validate DIR (the validate split), --devset-only, --no-devset, --no-levers
// (skip the table of what each part does), --all-levers (that table with the older parts too),
// --live-hold (first, the live hold measured on clips),
// --live-hold-only, --details (cvcam's misses on the fixtures).
import CaptureKit
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let fixtures = root.appendingPathComponent("Tests/Fixtures/faces")
let models = root.appendingPathComponent("Models")
let arguments = CommandLine.arguments

/// Plain YuNet-n's threshold chosen on the tuning split: the fair peer on the fixtures, whose 15
/// faces are too few to choose a threshold on.
var devSetThreshold: Double?
func folder(_ option: String, _ name: String) -> URL {
    let given = arguments.firstIndex(of: option).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    return given.map { URL(fileURLWithPath: $0) } ?? root.deletingLastPathComponent().appendingPathComponent("shared/devsets/\(name)")
}
let tuning = folder("--devset", "faces")
let validate = folder("--validate", "faces-validate")
func present(_ u: URL) -> Bool { FileManager.default.fileExists(atPath: u.appendingPathComponent("manifest.json").path) }

if arguments.contains("--live-hold") || arguments.contains("--live-hold-only") {
    // The face-free images of both splits (read in place) and the fixture photos with faces.
    var negatives: [(name: String, path: String)] = []
    for split in [tuning, validate] where present(split) {
        let m = try JSONDecoder().decode(DevSetManifest.self, from: Data(contentsOf: split.appendingPathComponent("manifest.json")))
        negatives += m.images.filter(\.negative).map { (($0.image as NSString).lastPathComponent, split.appendingPathComponent($0.image).path) }
    }
    if negatives.isEmpty { print("Neither split found: the live hold's face-free clips are the fixtures' only.\n") }
    let fixtureManifest = try JSONDecoder().decode(
        DevSetManifest.self, from: Data(contentsOf: fixtures.appendingPathComponent("manifest.json")))
    negatives += fixtureManifest.images.filter(\.negative).map { ($0.image, fixtures.appendingPathComponent($0.image).path) }
    let faces = fixtureManifest.images.filter { !$0.negative }.map { ($0.image, fixtures.appendingPathComponent($0.image).path) }
    try liveHoldReport(negatives: negatives, faces: faces, models: models)
    if arguments.contains("--live-hold-only") { exit(0) }
}

if !arguments.contains("--no-devset") && !arguments.contains("--details") {
    if present(tuning) {
        if !present(validate) {
            print("Validate split not found at \(validate.path): only the tuning split is scored (give its folder with --validate DIR).\n")
        }
        devSetThreshold = try splitsReport(
            tuning: tuning, validate: present(validate) ? validate : nil, models: models, levers: !arguments.contains("--no-levers"))
    } else {
        print("Dev set not found at \(tuning.path): its section is skipped (give its folder with --devset DIR).\n")
    }
    if arguments.contains("--devset-only") { exit(0) }
}

/// One evaluation image with its ground truth in pixels.
struct Sample {
    let name: String
    let image: PixelBuffer
    let faces: [CGRect]
    /// The Kaggle face-mask boxes follow PASCAL-VOC "eyebrows to chin" (see LICENSES.md).
    let vocBoxes: Bool
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-faces: \(message)\n".utf8))
    exit(1)
}

func render(_ scene: SyntheticScene) throws -> PixelBuffer {
    let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
    try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: scene.frameRate))
    defer { source.close() }
    guard let frame = try source.nextFrame(isCancelled: { false }) else { fail("synthetic scene gave no frame") }
    return frame.pixelBuffer
}

/// A detection box compared with a ground-truth box. For VOC-convention boxes the detection
/// (YuNet: forehead to chin) is first moved to that convention: top down by 20 % of its height,
/// height × 0.87 (the mean offsets between YuNet's and the annotators' boxes on the fixtures).
func overlap(_ detection: CGRect, _ truth: CGRect, voc: Bool) -> Double {
    let d = voc
        ? CGRect(x: detection.minX, y: detection.minY + 0.2 * detection.height, width: detection.width,
                 height: 0.87 * detection.height) : detection
    return d.intersectionOverUnion(truth)
}

struct Counts {
    var truePositives = 0, falsePositives = 0, missed = 0, falseOnFaceFree = 0, faceFreeImages = 0
    var recall: Double { Double(truePositives) / Double(max(1, truePositives + missed)) }
    var precision: Double { Double(truePositives) / Double(max(1, truePositives + falsePositives)) }
    var f1: Double { recall + precision > 0 ? 2 * recall * precision / (recall + precision) : 0 }
    var falsePerFaceFree: Double { Double(falseOnFaceFree) / Double(max(1, faceFreeImages)) }
}

/// Greedy matching, most confident first, at IoU ≥ 0.5.
func score(_ results: [(Sample, [FaceDetection])], threshold: Double = 0) -> Counts {
    var c = Counts()
    for (sample, detections) in results {
        let space = DeviceSpace(sample.image)
        var free = Set(sample.faces.indices)
        if sample.faces.isEmpty { c.faceFreeImages += 1 }
        for d in detections.sorted(by: { $0.confidence > $1.confidence }) where d.confidence >= threshold {
            let box = space.pixelRect(fromDevice: d.bounds)
            let best = free.map { ($0, overlap(box, sample.faces[$0], voc: sample.vocBoxes)) }.max { $0.1 < $1.1 }
            if let best, best.1 >= 0.5 {
                free.remove(best.0)
                c.truePositives += 1
            } else {
                c.falsePositives += 1
                if sample.faces.isEmpty { c.falseOnFaceFree += 1 }
            }
        }
        c.missed += free.count
    }
    return c
}

// MARK: - Data

guard let manifestData = try? Data(contentsOf: fixtures.appendingPathComponent("manifest.json")),
    // The fixtures' manifest has the dev set's schema (fewer fields).
    let manifest = try? JSONDecoder().decode(DevSetManifest.self, from: manifestData)
else { fail("cannot read \(fixtures.path)/manifest.json") }

var samples: [Sample] = []
for entry in manifest.images {
    let path = fixtures.appendingPathComponent(entry.image).path
    let image = try ImageFolderSource.decode(path)
    samples.append(Sample(
        name: entry.image, image: image,
        faces: entry.faces.map { CGRect(x: $0.box[0], y: $0.box[1], width: $0.box[2], height: $0.box[3]) },
        vocBoxes: entry.image.contains("maksssksksss")))
}
for (w, h) in [(640, 480), (1280, 720)] {
    let size = CaptureDevice.Dimensions(width: w, height: h)
    let frames: [(String, SyntheticScene.Background)] = [
        ("black", .color(red: 0, green: 0, blue: 0)),
        ("near-black 8", .color(red: 8, green: 8, blue: 8)),
        ("noise 128±40", .noise(seed: 7, mean: 128, standardDeviation: 40)),
        ("dark noise 20±6", .noise(seed: 9, mean: 20, standardDeviation: 6)),
    ]
    for (name, background) in frames {
        samples.append(Sample(
            name: "\(name) \(w)x\(h)", image: try render(SyntheticScene(size: size, background: background)), faces: [],
            vocBoxes: false))
    }
}

// MARK: - Detectors

let cvcam = try FaceDetector(configuration: .standard, modelsDirectory: models)
let cvcamRealTime = try FaceDetector(configuration: .realTime, modelsDirectory: models)
let yuNet2022Model = models.appendingPathComponent(FaceDetector.yuNet2022ModelName)
let yuNetNModel = models.appendingPathComponent(FaceDetector.yuNetModelName)
let yuNet2022 = try FaceDetector(configuration: .plain(scoreThreshold: 0.9), yuNetModel: yuNet2022Model, haarCascade: nil)
let yuNetLow = try FaceDetector(configuration: .plain(scoreThreshold: 0.3), yuNetModel: yuNetNModel, haarCascade: nil)
let haar = try FaceDetector(
    configuration: .plain(), yuNetModel: nil, haarCascade: models.appendingPathComponent(FaceDetector.haarCascadeName))
guard cvcam.backend == .yuNet else { fail("YuNet did not load from \(models.path)") }

let allSamples = samples
func run(_ detector: FaceDetector) throws -> [(Sample, [FaceDetection])] {
    try allSamples.map { ($0, try detector.detect(in: $0.image)) }
}

let cvcamCounts = score(try run(cvcam))
let yuNet2022Counts = score(try run(yuNet2022))
let lowResults = try run(yuNetLow)
var best = (threshold: 0.3, counts: score(lowResults, threshold: 0.3))
for t in stride(from: 0.35, through: 0.951, by: 0.05) {
    let c = score(lowResults, threshold: t)
    if c.f1 > best.counts.f1 + 1e-9 || (abs(c.f1 - best.counts.f1) < 1e-9 && c.falseOnFaceFree < best.counts.falseOnFaceFree) {
        best = (t, c)
    }
}
let yuNetBest = try FaceDetector(configuration: .plain(scoreThreshold: best.threshold), yuNetModel: yuNetNModel, haarCascade: nil)
let yuNetDevSet = try devSetThreshold.map {
    ($0, score(try run(try FaceDetector(configuration: .plain(scoreThreshold: $0), yuNetModel: yuNetNModel, haarCascade: nil))))
}
let haarCounts = score(try run(haar))
let realTimeCounts = score(try run(cvcamRealTime))

// MARK: - Cost

func timingFrame(_ w: Int, _ h: Int) throws -> PixelBuffer {
    try render(SyntheticScene(
        size: .init(width: w, height: h),
        background: .image(path: fixtures.appendingPathComponent("images/maksssksksss523.jpg").path)))
}

/// Median milliseconds per frame, the detectors interleaved so load changes hit all alike.
func cost(_ detectors: [FaceDetector], frame: PixelBuffer, rounds: Int) throws -> [Double] {
    for d in detectors { _ = try d.detect(in: frame) }  // warm up (OpenCV allocations, DNN setup)
    var times = Array(repeating: [Double](), count: detectors.count)
    for _ in 0..<rounds {
        for (i, d) in detectors.enumerated() {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try d.detect(in: frame)
            times[i].append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
    }
    return times.map { $0.sorted()[$0.count / 2] }
}

let timed = [cvcam, yuNetBest, yuNet2022, haar, cvcamRealTime]
let ms480 = try cost(timed, frame: try timingFrame(640, 480), rounds: 15)
let ms720 = try cost(timed, frame: try timingFrame(1280, 720), rounds: 9)
/// Plain YuNet-n on the 1280x720 frame already scaled to 640x360: the input `.realTime` runs at.
/// Plain YuNet-n as a user runs it on a 720p camera at 640 px: the frame resized, then searched
/// (`.plain` with the same 640 px long side), interleaved with `.realTime` on the same frame.
var plain640 = FaceDetector.Configuration.plain(scoreThreshold: best.threshold)
plain640.maximumDetectionDimension = 640
let live = try cost(
    [cvcamRealTime, try FaceDetector(configuration: plain640, yuNetModel: yuNetNModel, haarCascade: nil)],
    frame: try timingFrame(1280, 720), rounds: 25)

func pct(_ x: Double) -> String { String(format: "%.3f", x) }
func ms(_ x: Double) -> String { String(format: "%.1f", x) }

print("## Faces on the fixtures: cvcam vs plain YuNet-n, YuNet 2022mar and Haar alt2 (same run)\n")
print("Set: \(samples.filter { !$0.faces.isEmpty }.count) photos with \(samples.reduce(0) { $0 + $1.faces.count }) faces (Tests/Fixtures/faces), "
    + "\(samples.filter { $0.faces.isEmpty }.count) face-free images (4 fixture negatives + black, near-black, noise and dark noise at 640x480 and 1280x720). "
    + "Match: IoU ≥ 0.5, face-mask VOC boxes compared after the convention shift (see source).\n")
print("| detector | recall | precision | F1 | false faces / face-free image | ms 640x480 | ms 1280x720 | cost / plain YuNet-n (480p, 720p) |")
print("|---|---|---|---|---|---|---|---|")
let rows: [(String, Counts, Int)] = [
    ("cvcam FaceDetector (.standard)", cvcamCounts, 0),
    ("YuNet-n plain, threshold \(String(format: "%.2f", best.threshold)) (the best on these 15 faces: chosen on the answers)", best.counts, 1),
    ("YuNet 2022mar plain, threshold 0.9", yuNet2022Counts, 2),
    ("Haar alt2 plain (1.1, 4 neighbours)", haarCounts, 3),
    ("cvcam FaceDetector (.realTime: the metadata output's default for video)", realTimeCounts, 4),
]
for (name, c, i) in rows + (yuNetDevSet.map { [("YuNet-n plain, threshold \(String(format: "%.2f", $0.0)) (its best on the dev set)", $0.1, 1)] } ?? []) {
    print("| \(name) | \(pct(c.recall)) | \(pct(c.precision)) | \(pct(c.f1)) | \(pct(c.falsePerFaceFree)) | \(ms(ms480[i])) | \(ms(ms720[i])) | \(String(format: "%.2f×, %.2f×", ms480[i] / ms480[1], ms720[i] / ms720[1])) |")
}

let blackFrame = try render(SyntheticScene(size: .init(width: 1280, height: 720), background: .color(red: 0, green: 0, blue: 0)))
print(String(format: "\n`.realTime` on the 1280x720 frame: %.1f ms; plain YuNet-n resizing that frame to 640x360 (the input `.realTime` runs at) and searching it: %.1f ms; ratio %.2f× (median of 25, interleaved).", live[0], live[1], live[0] / live[1]))
let msBlack = try cost([cvcam, yuNetBest], frame: blackFrame, rounds: 5)
print("\nOn a black 1280x720 frame the content gate skips the detector: cvcam \(ms(msBlack[0])) ms, plain YuNet \(ms(msBlack[1])) ms.")

// MARK: - What each part contributes (ablation)

/// The fixtures again at 0.5× and 0.75× (smaller faces, as in crowded photos), the face-free
/// fixtures also at 1.5× and 2×, plus the generated frames: every check measured on more than
/// the 23 images above.
var extended = allSamples
for entry in manifest.images {
    let path = fixtures.appendingPathComponent(entry.image).path
    let original = try ImageFolderSource.decode(path)
    for factor in entry.negative ? [0.5, 0.75, 1.5, 2.0] : [0.5, 0.75] {
        let size = CaptureDevice.Dimensions(
            width: Int((Double(original.width) * factor).rounded()), height: Int((Double(original.height) * factor).rounded()))
        let fx = Double(size.width) / Double(original.width)
        let fy = Double(size.height) / Double(original.height)
        extended.append(Sample(
            name: "\(entry.image)@\(factor)", image: try render(SyntheticScene(size: size, background: .image(path: path))),
            faces: entry.faces.map { CGRect(x: $0.box[0] * fx, y: $0.box[1] * fy, width: $0.box[2] * fx, height: $0.box[3] * fy) },
            vocBoxes: entry.image.contains("maksssksksss")))
    }
}
let extendedSamples = extended

/// `bench-faces --details`: list cvcam's misses and false faces on the extended set, then stop.
if CommandLine.arguments.contains("--details") {
    for sample in extendedSamples {
        let found = try cvcam.detect(in: sample.image)
        let space = DeviceSpace(sample.image)
        let boxes = found.map { space.pixelRect(fromDevice: $0.bounds) }
        for (box, d) in zip(boxes, found) where !sample.faces.contains(where: { overlap(box, $0, voc: sample.vocBoxes) >= 0.5 }) {
            print("false face \(sample.name) \(box.integral) score \(String(format: "%.2f", d.confidence))")
        }
        for truth in sample.faces where !boxes.contains(where: { overlap($0, truth, voc: sample.vocBoxes) >= 0.5 }) {
            print("missed \(sample.name) \(truth.integral)")
        }
    }
    exit(0)
}

let variants: [(String, FaceDetector.Configuration)] = [
    ("cvcam .standard", .standard),
    ("− frame content gate", variant { $0.minimumFrameContrast = 0 }),
    ("− smallest face 15 px", variant { $0.minimumFaceSize = 0 }),
    ("+ box contrast check", variant { $0.minimumContrast = 10 }),
    ("+ landmark geometry check, upright second look", variant { $0.checksLandmarkGeometry = true; $0.uprightRecheckScore = 0.9 }),
    ("− detection scaling (image at its own size)", variant { $0.maximumDetectionDimension = nil }),
    ("+ enlarging small images to 640 px", variant { $0.minimumDetectionDimension = 640 }),
    ("threshold 0.6", variant { $0.scoreThreshold = 0.6 }),
    ("threshold 0.75", variant { $0.scoreThreshold = 0.75 }),
    ("threshold 0.8", variant { $0.scoreThreshold = 0.8 }),
]
print("\n## What each part does (\(extendedSamples.filter { !$0.faces.isEmpty }.count) photos with \(extendedSamples.reduce(0) { $0 + $1.faces.count }) faces, \(extendedSamples.filter { $0.faces.isEmpty }.count) face-free: the set above plus rescaled copies)\n")
print("| variant | recall | precision | F1 | false faces / face-free image |")
print("|---|---|---|---|---|")
for (name, configuration) in variants {
    let d = try FaceDetector(configuration: configuration, modelsDirectory: models)
    let c = score(try extendedSamples.map { ($0, try d.detect(in: $0.image)) })
    print("| \(name) | \(pct(c.recall)) | \(pct(c.precision)) | \(pct(c.f1)) | \(pct(c.falsePerFaceFree)) |")
}
let extendedLow = try extendedSamples.map { ($0, try yuNetLow.detect(in: $0.image)) }
for t in [0.6, 0.7, 0.8, 0.9] {
    let c = score(extendedLow, threshold: t)
    print("| YuNet-n plain, threshold \(t) | \(pct(c.recall)) | \(pct(c.precision)) | \(pct(c.f1)) | \(pct(c.falsePerFaceFree)) |")
}

// MARK: - Smallest face per preset

/// Pastes grace_hopper.jpg (face box 176,121 181×211) scaled so the face is `side` px wide,
/// at four places over a face-free background (rocket.jpg), and counts the places found.
func foundCount(_ detector: FaceDetector, preset: CaptureDevice.Dimensions, side: Double) throws -> Int {
    var found = 0
    let places = [(0.3, 0.35), (0.7, 0.35), (0.3, 0.7), (0.7, 0.7)]
    for (fx, fy) in places {
        let (sprite, face) = SyntheticScene.Sprite.image(
            path: fixtures.appendingPathComponent("images/grace_hopper.jpg").path, imageSize: .init(width: 512, height: 600),
            placing: CGRect(x: 176, y: 121, width: 181, height: 211), width: side,
            centredAt: CGPoint(x: Double(preset.width) * fx, y: Double(preset.height) * fy))
        let frame = try render(SyntheticScene(
            size: preset, background: .image(path: fixtures.appendingPathComponent("negatives/rocket.jpg").path),
            sprites: [sprite]))
        let space = DeviceSpace(width: preset.width, height: preset.height)
        let hit = try detector.detect(in: frame).contains { d in
            space.pixelRect(fromDevice: d.bounds).intersectionOverUnion(face) >= 0.5
        }
        if hit { found += 1 }
    }
    return found
}

let cvcamTiled = try FaceDetector(configuration: .tiled, modelsDirectory: models)
let ms1080 = try cost([cvcam, cvcamTiled, yuNetBest], frame: try timingFrame(1920, 1080), rounds: 5)
print("\n## Cost at 1920x1080 (ms per frame, median of 5)\n")
print("| cvcam .standard (at its own size) | cvcam .tiled (1280 + 640 px tiles at full size) | YuNet-n plain at 1920x1080 |")
print("|---|---|---|")
print("| \(ms(ms1080[0])) (\(String(format: "%.2f×", ms1080[0] / ms1080[2]))) | \(ms(ms1080[1])) (\(String(format: "%.2f×", ms1080[1] / ms1080[2]))) | \(ms(ms1080[2])) |")
let sides: [Double] = [128, 96, 80, 64, 56, 48, 40, 32, 28, 24, 20, 16, 14, 12, 10]
print("\n## Smallest face found reliably (face width in frame pixels, found at all 4 places and at every larger size)\n")
print("| preset | cvcam .realTime | cvcam .standard | cvcam .tiled | YuNet-n plain, best threshold |")
print("|---|---|---|---|---|")
for preset in [CaptureDevice.Dimensions(width: 640, height: 480), .init(width: 1280, height: 720), .init(width: 1920, height: 1080)] {
    var cells: [String] = []
    for detector in [cvcamRealTime, cvcam, cvcamTiled, yuNetBest] {
        var smallest: Double?
        var detail: [String] = []
        for side in sides {
            let n = try foundCount(detector, preset: preset, side: side)
            detail.append("\(Int(side)):\(n)")
            if n == 4 { smallest = side } else { break }
        }
        cells.append("\(smallest.map { "\(Int($0)) px" } ?? "> 128 px") (\(detail.suffix(2).joined(separator: ", ")))")
    }
    print("| \(preset.width)x\(preset.height) | \(cells.joined(separator: " | ")) |")
}
