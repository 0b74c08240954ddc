// The live hold (`FaceTracker.Configuration.framesToEnter`), measured on clips rather than
// photos: each face-free image of the two splits and each fixture face photo becomes a 30 fps
// 640x480 clip in which the photo drifts slowly over a noise background (so YuNet sees it
// resampled differently in every frame), run through `DefaultFaceStage` with `.realTime` (the
// live default: spread searches, tracked faces followed near their boxes) at each hold. Counted:
// `faceEntered` events on the face-free clips (false enters), and on the face clips how many
// frames after the photo appeared the first face entered.
import CaptureKit
import Foundation

/// A clip: its frames, and for a face clip the frame the photo appears in.
struct HoldClip {
    let name: String
    let frames: [PixelBuffer]
    let appearsAtFrame: Int?
}

let holdFrameRate = 30.0

/// A 640x480 clip of `path`, fitted into 90 % of the frame and drifting 20 px/s right and
/// 10 px/s down, appearing at `appearsAt` seconds; `frames` frames long.
func holdClip(_ path: String, name: String, appearsAt: Double, frames: Int) throws -> HoldClip {
    let photo = try ImageFolderSource.decode(path)
    let k = min(0.9 * 640 / Double(photo.width), 0.9 * 480 / Double(photo.height))
    let size = CaptureDevice.Dimensions(width: Int(Double(photo.width) * k), height: Int(Double(photo.height) * k))
    let sprite = SyntheticScene.Sprite(
        content: .image(path: path), size: size,
        origin: CGPoint(x: (640 - Double(size.width)) / 2 - 10, y: (480 - Double(size.height)) / 2 - 5),
        velocity: CGSize(width: 20, height: 10), appearsAt: appearsAt)
    let scene = SyntheticScene(
        size: .init(width: 640, height: 480), frameRate: holdFrameRate, frameCount: frames,
        background: .noise(seed: 11, mean: 110, standardDeviation: 30), sprites: [sprite])
    let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
    try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: holdFrameRate))
    defer { source.close() }
    var out: [PixelBuffer] = []
    while let frame = try source.nextFrame(isCancelled: { false }) { out.append(frame.pixelBuffer) }
    return HoldClip(name: name, frames: out, appearsAtFrame: appearsAt > 0 ? Int((appearsAt * holdFrameRate).rounded(.up)) : nil)
}

/// The frames at which faces entered when `clip` runs through a fresh `DefaultFaceStage`
/// holding new faces for `hold` frames.
func enterFrames(_ clip: HoldClip, hold: Int, models: URL) throws -> [Int] {
    let stage = DefaultFaceStage(
        detector: try FaceDetector(configuration: .realTime, modelsDirectory: models),
        tracking: FaceTracker.Configuration(framesToEnter: hold))
    var entered: [Int] = []
    for (i, frame) in clip.frames.enumerated() {
        let sample = SampleBuffer(
            pixelBuffer: frame, presentationTimeStamp: MediaTime(value: Int64(i), timescale: Int32(holdFrameRate)),
            duration: MediaTime.frameDuration(framesPerSecond: holdFrameRate), sequenceNumber: UInt64(i),
            inputID: CaptureInput.ID(rawValue: 1))
        let r = try stage.process(
            AnalysisFrame(sample), regionOfInterest: CGRect(x: 0, y: 0, width: 1, height: 1), updateInterval: 0.25,
            scanInterval: 0.1)
        for event in r.events { if case .faceEntered = event { entered.append(i) } }
    }
    _ = stage.finish()
    return entered
}

/// Prints the live-hold table: false enters on the face-free clips and the delay of the first
/// real enter on the face clips, for holds of 1 (none) to 3 frames.
func liveHoldReport(negatives: [(name: String, path: String)], faces: [(name: String, path: String)], models: URL) throws {
    let negativeClips = try negatives.map { try holdClip($0.path, name: $0.name, appearsAt: 0, frames: 45) }
    let faceClips = try faces.map { try holdClip($0.path, name: $0.name, appearsAt: 0.5, frames: 45) }
    print("\n## Live hold: a new face enters only after N consecutive frames (clips, `.realTime`, 30 fps)\n")
    print("\(negativeClips.count) face-free clips (each face-free image of both splits drifting over noise, 1.5 s) and "
        + "\(faceClips.count) face clips (each fixture photo with faces, appearing at 0.5 s, then drifting). "
        + "Delay: frames from the photo's first frame to the first `faceEntered` (at 30 fps one frame is 33 ms).\n")
    print("| hold (frames) | false enters on face-free clips | face-free clips with one | face clips entered | delay of the first enter, median (max) | false-enter clips |")
    print("|---|---|---|---|---|---|")
    for hold in 1...3 {
        var falseEnters = 0
        var firing: [String] = []
        for clip in negativeClips {
            let n = try enterFrames(clip, hold: hold, models: models).count
            falseEnters += n
            if n > 0 { firing.append(clip.name) }
        }
        var delays: [Int] = []
        for clip in faceClips {
            if let first = try enterFrames(clip, hold: hold, models: models).first, let start = clip.appearsAtFrame {
                delays.append(first - start)
            }
        }
        delays.sort()
        let delay = delays.isEmpty ? "–" : "\(delays[delays.count / 2]) (\(delays.last!))"
        print("| \(hold)\(hold == FaceTracker.Configuration.video.framesToEnter ? " (default)" : "") | \(falseEnters) | \(firing.count) of \(negativeClips.count) | "
            + "\(delays.count) of \(faceClips.count) | \(delay) | \(firing.joined(separator: ", ").nonEmpty ?? "none") |")
    }
}
