import ArgumentParser
import CaptureKit
import Foundation
import Synchronization

/// Cost per frame against resolution, faces, codes and rect-of-interest area, on synthetic
/// input rendered in-process (no file decode), every frame analysed.
struct Scaling: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Per-frame cost against resolution, faces, codes and rect of interest (synthetic input).")

    @OptionGroup var fixtures: FixtureOptions
    @Option(help: "Frames per configuration.") var frames = 24

    func run() throws {
        let folder = try fixtures.folder()
        let hd = CaptureDevice.Dimensions(width: 1280, height: 720)
        let full = CaptureDevice.Dimensions(width: 1920, height: 1080)
        var configs: [(axis: String, size: CaptureDevice.Dimensions, faces: Int, codes: Int, roiArea: Double)] = []
        for size in [(640, 480), (1280, 720), (1920, 1080), (3840, 2160)] {
            configs.append(("resolution", .init(width: size.0, height: size.1), 1, 1, 1))
        }
        for faces in [0, 1, 5] { configs.append(("faces", hd, faces, 1, 1)) }
        for codes in [0, 1, 3] { configs.append(("codes", hd, 1, codes, 1)) }
        for area in [1.0, 0.5, 0.25] { configs.append(("roi", full, 5, 3, area)) }

        for c in configs {
            let scene = BenchScenes.scene(size: c.size, faces: c.faces, codes: c.codes, frames: frames, fixtures: folder)
            let side = c.roiArea.squareRoot()
            let roi = CGRect(x: (1 - side) / 2, y: (1 - side) / 2, width: side, height: side)
            func measure(_ types: [MetadataObjectType]) throws -> (wall: Double, cpu: Double, faces: Double, codes: Double) {
                let device = try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)
                let metadata = try makeDetectingOutput(types)
                metadata.rectOfInterest = roi
                let cpu0 = cpuSeconds()
                let wall = try runToEnd(device: device, outputs: [metadata])
                let cpu = cpuSeconds() - cpu0
                let n = Double(max(metadata.processedFrameCount, 1))
                let s = metadata.stageSeconds
                return (wall / n * 1000, cpu / n * 1000, s.faces / n * 1000, s.codes / n * 1000)
            }
            let facesOnly = try measure([.face])
            let codesOnly = try measure([.qr])
            let both = try measure([.face, .qr])
            emitJSON([
                "kind": "scaling", "axis": c.axis, "width": c.size.width, "height": c.size.height,
                "megapixels": r(Double(c.size.area) / 1e6, 3), "faces": c.faces, "codes": c.codes,
                "roi_area": c.roiArea, "frames": frames,
                "faces_ms": r(facesOnly.faces, 2), "codes_ms": r(codesOnly.codes, 2),
                "both_wall_ms": r(both.wall, 2), "both_cpu_ms": r(both.cpu, 2),
            ])
        }
    }
}

/// A face stage that finds nothing and reports the whole frame as one face, recording when it
/// returned: with it, a session's time is all capture, hand-off and delivery, no detection.
final class PassThroughFaceStage: FaceMetadataStage {
    /// Frame time (seconds) → monotonic time the stage returned.
    let returned = Mutex<[Double: Double]>([:])
    var isAvailable: Bool { true }

    func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let time = frame.time
        let face = MetadataFaceObject(
            bounds: regionOfInterest, faceID: 1, confidence: 1, time: time, inputID: frame.inputID)
        let t = now()
        returned.withLock { $0[time.seconds] = t }
        return ([face], [])
    }

    func finish() -> [MetadataEvent] { [] }
}

/// Records nothing; lets a video data output run its conversion for every frame.
final class DiscardingVideoDelegate: CaptureVideoDataOutputSampleBufferDelegate {
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {}
}

/// Where a frame's time goes: capture/decode, conversion, faces, codes, delivery.
struct Breakdown: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Per-stage cost on one clip: capture/decode, BGR→gray conversion, faces, codes, delivery.")

    @Option(help: "The clip (every frame analysed).") var input: String

    func run() throws {
        // Capture/decode: a native-format video data output that waits for every frame.
        func videoRun(_ format: PixelFormat?) throws -> (cpu: Double, wall: Double, frames: Int) {
            let device = try CaptureDevice(videoFileAtPath: input, pacing: .asFastAsPossible)
            let video = CaptureVideoDataOutput()
            video.videoPixelFormat = format
            video.alwaysDiscardsLateVideoFrames = false
            video.setSampleBufferDelegate(DiscardingVideoDelegate(), queue: DispatchQueue(label: "bench.video"))
            let cpu0 = cpuSeconds()
            let wall = try runToEnd(device: device, outputs: [video])
            Thread.sleep(forTimeInterval: 0.05)  // let the last delivery finish
            return (cpuSeconds() - cpu0, wall, video.deliveredFrameCount)
        }
        let native = try videoRun(nil)
        let gray = try videoRun(.gray)
        let n = Double(max(native.frames, 1))
        let decodeMs = native.cpu / n * 1000
        let conversionMs = max(0, gray.cpu - native.cpu) / Double(max(gray.frames, 1)) * 1000

        func stageRun(_ types: [MetadataObjectType]) throws -> (faces: Double, codes: Double) {
            let device = try CaptureDevice(videoFileAtPath: input, pacing: .asFastAsPossible)
            let metadata = try makeDetectingOutput(types)
            _ = try runToEnd(device: device, outputs: [metadata])
            let k = Double(max(metadata.processedFrameCount, 1))
            return (metadata.stageSeconds.faces / k * 1000, metadata.stageSeconds.codes / k * 1000)
        }
        let facesMs = try stageRun([.face]).faces
        let codesMs = try stageRun([.qr]).codes

        // Delivery: stage return → delegate, with a stage that does no work.
        let stage = PassThroughFaceStage()
        let metadata = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
        try metadata.setMetadataObjectTypes([.face])
        let recorder = MetadataRecorder(keepsArrivals: true)
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "bench.delegate"))
        let device = try CaptureDevice(videoFileAtPath: input, pacing: .asFastAsPossible)
        let passWall = try runToEnd(device: device, outputs: [metadata])
        let returned = stage.returned.withLock { $0 }
        let arrivals = recorder.state.withLock { $0.arrivals }
        let delivery = arrivals.compactMap { key, t in returned[key].map { (t - $0) * 1000 } }
        let deliveryMs = Stats.percentile(delivery, 50)

        let stages: [(String, Double)] = [
            ("capture/decode", decodeMs), ("conversion (BGR→gray)", conversionMs), ("faces", facesMs),
            ("codes", codesMs), ("delivery", deliveryMs),
        ]
        let slowest = stages.max { $0.1 < $1.1 }?.0 ?? ""
        emitJSON([
            "kind": "breakdown", "input": input, "frames": native.frames,
            "stages_ms": Dictionary(uniqueKeysWithValues: stages.map { ($0.0, r($0.1, 3)) }),
            "delivery_p99_ms": r(Stats.percentile(delivery, 99), 3),
            "pipeline_without_detection_ms_per_frame": r(passWall / Double(max(metadata.processedFrameCount, 1)) * 1000, 2),
            "slowest": slowest,
        ])
    }
}
