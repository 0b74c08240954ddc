// capture-probe: a helper process for the photo and movie tests and measurements.
//
//   CaptureProbe record <file.avi> <fragment seconds> <fast|realtime> [seconds]
//       Records a synthetic 640x480 30 fps camera; prints "frames <n>" as the recording grows,
//       so a parent can kill it (SIGKILL) at a known point and count what survived.
//   CaptureProbe snapshot-latency <folder> <count>
//       Times trigger → JPEG on disk for 1280x720 snapshots; prints median and p95 in ms.
//   CaptureProbe codes <image>
//       Decodes one image (ImageFolderSource.decode) and prints each code CodeDetector reads in it
//       as "code <text>": what `cvcam scan IMAGE` does, for the start-up tests (LeanStartTests),
//       which watch the libraries it loads.
//   CaptureProbe faces <image> <models folder>
//       The same with FaceDetector; prints "faces <n>".
//   CaptureProbe video <file>
//       Opens a video (VideoFileSource) and decodes its first frame; prints "frame <w>x<h>".
import CaptureKit
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line straight to fd 1 (unbuffered: the parent may kill this process at any moment).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class Finished: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: `done` is a semaphore, `error` is written once before it is signalled.
    let done = DispatchSemaphore(value: 0)
    var error: CaptureError?
    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection], error: (any Error)?) {
        self.error = error.map { $0 as? CaptureError ?? CaptureError(.writeFailed, "\($0)") }
        done.signal()
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

func record(_ args: [String]) throws {
    guard args.count >= 3, let fragment = Double(args[1]) else { fail("usage: record <file> <fragment s> <fast|realtime> [seconds]") }
    let seconds = args.count > 3 ? Double(args[3]) ?? 60 : 60
    let scene = SyntheticScene(
        size: .init(width: 640, height: 480), frameRate: 30, frameCount: Int(seconds * 30),
        background: .noise(seed: 7, mean: 110, standardDeviation: 40),
        sprites: [.init(content: .color(red: 240, green: 200, blue: 20), size: .init(width: 80, height: 80),
                        origin: CGPoint(x: 0, y: 200), velocity: CGSize(width: 60, height: 0))])
    let device = try CaptureDevice(syntheticScene: scene, pacing: args[2] == "fast" ? .asFastAsPossible : .realTime)
    let session = CaptureSession()
    try session.addInput(try CaptureDeviceInput(device: device))
    let movie = CaptureMovieFileOutput()
    movie.movieFragmentInterval = MediaTime(seconds: fragment)
    try session.addOutput(movie)
    let finished = Finished()
    try movie.startRecording(to: URL(fileURLWithPath: args[0]), recordingDelegate: finished)
    try session.startRunning()
    var last = -1
    while finished.done.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
        let frames = Int((movie.recordedDuration.seconds * 30).rounded())
        if frames != last {
            say("frames \(frames)")
            last = frames
        }
    }
    say("finished \(finished.error.map { "\($0.code)" } ?? "ok")")
}

func snapshotLatency(_ args: [String]) throws {
    guard args.count >= 2, let count = Int(args[1]) else { fail("usage: snapshot-latency <folder> <count>") }
    let folder = URL(fileURLWithPath: args[0])
    let scene = SyntheticScene(
        size: .init(width: 1280, height: 720), frameRate: 30,
        background: .noise(seed: 3, mean: 120, standardDeviation: 35))
    let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
    try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
    defer { source.close() }
    let trigger = SnapshotTrigger(configuration: .init(minimumSharpness: 1))
    let store = SnapshotStore(folder: folder)
    let input = CaptureInput.ID(rawValue: 1)
    var times: [Double] = []
    for i in 0..<count {
        guard let f = try source.nextFrame(isCancelled: { false }) else { break }
        let sample = SampleBuffer(
            pixelBuffer: f.pixelBuffer, presentationTimeStamp: f.presentationTimeStamp,
            duration: MediaTime(value: 1, timescale: 30), sequenceNumber: f.sequenceNumber, inputID: input)
        let face = MetadataFaceObject(
            bounds: CGRect(x: 0.4, y: 0.3, width: 0.15, height: 0.27), faceID: i + 1, confidence: 0.9,
            time: sample.presentationTimeStamp, inputID: input)
        let start = DispatchTime.now().uptimeNanoseconds
        for snapshot in trigger.process(sample, faces: [face]) { try store.write(snapshot) }
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    times.sort()
    let median = times[times.count / 2]
    let p95 = times[min(times.count - 1, Int((Double(times.count) * 0.95).rounded(.up)) - 1)]
    say(String(format: "snapshots %d  1280x720 trigger->file median %.1f ms  p95 %.1f ms", times.count, median, p95))
}

func codes(_ args: [String]) throws {
    guard args.count == 1 else { fail("usage: codes <image>") }
    let image = try ImageFolderSource.decode(args[0])
    for code in try CodeDetector().detections(in: image) { say("code \(code.stringValue ?? "(binary)")") }
}

func faces(_ args: [String]) throws {
    guard args.count == 2 else { fail("usage: faces <image> <models folder>") }
    let image = try ImageFolderSource.decode(args[0])
    let detector = try FaceDetector(modelsDirectory: URL(fileURLWithPath: args[1]))
    say("faces \(try detector.detect(in: image).count)")
}

func video(_ args: [String]) throws {
    guard args.count == 1 else { fail("usage: video <file>") }
    let source = try VideoFileSource(path: args[0], pacing: .asFastAsPossible)
    try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
    defer { source.close() }
    guard let frame = try source.nextFrame(isCancelled: { false }) else { fail("no frame in \(args[0])") }
    say("frame \(frame.pixelBuffer.width)x\(frame.pixelBuffer.height)")
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "record": try record(Array(arguments.dropFirst()))
    case "snapshot-latency": try snapshotLatency(Array(arguments.dropFirst()))
    case "codes": try codes(Array(arguments.dropFirst()))
    case "faces": try faces(Array(arguments.dropFirst()))
    case "video": try video(Array(arguments.dropFirst()))
    default: fail("usage: CaptureProbe record|snapshot-latency|codes|faces|video …")
    }
} catch {
    fail("CaptureProbe: \(error)")
}
