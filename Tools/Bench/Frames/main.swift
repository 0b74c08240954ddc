// bench-frames: how fast a video file is read through a session into a video data output.
//
//   bench-frames CLIP [bgr|gray|native] [--make WxH FRAMES]
//
// With --make, writes a deterministic clip (colour bars and a moving QR code, MJPEG-in-AVI)
// to CLIP first. Prints one line: frames, seconds, frames per second.
import CaptureKit
import Dispatch
import Foundation

final class Counter: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: `frames` is touched only on the delegate's serial queue and read after the run.
    var frames = 0
    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        frames += 1
    }
}

var args = Array(CommandLine.arguments.dropFirst())
guard let clip = args.first else {
    print("usage: bench-frames CLIP [bgr|gray|native] [--make WxH FRAMES]")
    exit(64)
}
if let i = args.firstIndex(of: "--make"), i + 2 < args.count {
    let size = args[i + 1].split(separator: "x").compactMap { Int($0) }
    let frames = Int(args[i + 2]) ?? 120
    let scene = SyntheticScene(
        size: .init(width: size[0], height: size[1]), frameRate: 30, frameCount: frames, background: .colorBars,
        sprites: [
            .init(
                content: .qrCode(payload: Array("bench".utf8), correction: 1),
                size: .init(width: size[1] / 3, height: size[1] / 3), origin: CGPoint(x: 0, y: 40),
                velocity: CGSize(width: 200, height: 0))
        ])
    try scene.writeClip(to: clip)
    args.removeSubrange(i...(i + 2))
}
let format: PixelFormat? =
    switch args.dropFirst().first ?? "bgr" {
    case "gray": .gray
    case "native": nil
    default: .bgr
    }

let session = CaptureSession()
try session.addInput(CaptureDeviceInput(device: CaptureDevice(videoFileAtPath: clip, pacing: .asFastAsPossible)))
let output = CaptureVideoDataOutput()
output.alwaysDiscardsLateVideoFrames = false
output.videoPixelFormat = format
let counter = Counter()
let queue = DispatchQueue(label: "bench")
output.setSampleBufferDelegate(counter, queue: queue)
try session.addOutput(output)
let start = DispatchTime.now().uptimeNanoseconds
try session.startRunning()
session.waitUntilStopped()
queue.sync {}
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
print(String(format: "frames %d  seconds %.3f  fps %.1f  format %@", counter.frames, seconds, Double(counter.frames) / seconds, format?.description ?? "native"))
