// bench-pipeline: the library side of Tools/bench. Each subcommand measures one thing with
// CaptureSession + CaptureMetadataOutput and prints one JSON object per measurement on stdout.
import ArgumentParser
import CaptureKit
import Foundation

@main
struct BenchPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-pipeline",
        abstract: "Measures cvcam's capture + metadata pipeline (run through Tools/bench).",
        subcommands: [Clips.self, Batch.self, Live.self, Scaling.self, Breakdown.self, Soak.self])
}

struct FixtureOptions: ParsableArguments {
    @Option(help: "Folder of the face fixture photos (default: Tests/Fixtures/faces/images above here).")
    var fixtures: String?

    func folder() throws -> String {
        guard let folder = BenchScenes.locateFixtures(fixtures) else {
            throw BenchError("cannot find Tests/Fixtures/faces/images; pass --fixtures DIR")
        }
        return folder
    }
}

/// Writes the benchmark clips (MJPEG AVI, 30 fps), deterministically.
struct Clips: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the throughput and latency clips into a folder, with a manifest.json.")

    @OptionGroup var fixtures: FixtureOptions
    @Option(help: "Output folder.") var out: String
    @Option(help: "Frames per throughput clip.") var frames = 60
    @Option(help: "Frames per live-latency clip.") var liveFrames = 300
    @Option(help: "Sizes of the throughput clips.") var sizes = "1280x720,1920x1080"

    func run() throws {
        let folder = try fixtures.folder()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var clips: [[String: Any]] = []
        func write(_ name: String, _ size: CaptureDevice.Dimensions, faces: Int, codes: Int, frames: Int, kind: String)
            throws
        {
            let path = out + "/" + name
            if !FileManager.default.fileExists(atPath: path) {
                let scene = BenchScenes.scene(size: size, faces: faces, codes: codes, frames: frames, fixtures: folder)
                try scene.writeClip(to: path + ".tmp.avi")
                try FileManager.default.moveItem(atPath: path + ".tmp.avi", toPath: path)
            }
            clips.append([
                "path": path, "kind": kind, "width": size.width, "height": size.height, "faces": faces, "codes": codes,
                "frames": frames,
            ])
        }
        for text in sizes.split(separator: ",") {
            let p = text.split(separator: "x").compactMap { Int($0) }
            guard p.count == 2 else { throw BenchError("bad size \(text)") }
            let size = CaptureDevice.Dimensions(width: p[0], height: p[1])
            for faces in [0, 1, 5] {
                for codes in [0, 1, 3] {
                    try write("tp-\(size)-f\(faces)-c\(codes).avi", size, faces: faces, codes: codes, frames: frames, kind: "throughput")
                }
            }
            try write("live-\(size)-f1-c1.avi", size, faces: 1, codes: 1, frames: liveFrames, kind: "live")
        }
        let data = try JSONSerialization.data(withJSONObject: ["clips": clips], options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: out + "/manifest.json"))
        print("wrote \(clips.count) clips to \(out)")
    }
}

/// Batch throughput of the library on one clip: every frame analysed, as fast as possible.
struct Batch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Analyse every frame of a clip as fast as possible; print fps and stage times.")

    @Option(help: "The clip.") var input: String
    @Option(help: "Metadata types, comma-separated.") var types = "face,qr"
    @Option(help: "Rect of interest x,y,w,h in device space.") var roi: String?
    @Option(help: "Face detection: realtime (the default) or standard.") var faceDetection: FaceDetectionChoice = .realtime

    func run() throws {
        let device = try CaptureDevice(videoFileAtPath: input, pacing: .asFastAsPossible)
        let metadata = try makeDetectingOutput(parseTypes(types), faceDetection: faceDetection.configuration)
        if let roi, let rect = parseRect(roi) { metadata.rectOfInterest = rect }
        // Every code in every frame, so the counts say what was found per frame.
        metadata.codeRepeatInterval = 0
        let recorder = MetadataRecorder()
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "bench.delegate"))
        let cpu0 = cpuSeconds()
        let seconds = try runToEnd(device: device, outputs: [metadata])
        let cpu = cpuSeconds() - cpu0
        let n = metadata.processedFrameCount
        let stages = metadata.stageSeconds
        let s = recorder.state.withLock { $0 }
        emitJSON([
            "kind": "batch", "peer": "cvcam-lib", "input": input, "types": types, "face_detection": faceDetection.rawValue,
            "frames": n,
            "skipped": metadata.skippedFrameCount, "seconds": r(seconds), "fps": r(Double(n) / seconds, 2),
            "cpu_ms_per_frame": r(cpu / Double(max(n, 1)) * 1000, 2),
            "faces_ms_per_frame": r(stages.faces / Double(max(n, 1)) * 1000, 2),
            "codes_ms_per_frame": r(stages.codes / Double(max(n, 1)) * 1000, 2),
            "faces_per_frame": r(Double(s.faceObjects) / Double(max(n, 1)), 2),
            "codes_per_frame": r(Double(s.codeObjects) / Double(max(n, 1)), 2),
        ])
    }
}

/// Live latency: the clip released at its own 30 fps, like a camera.
struct Live: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a clip at its frame rate; print frame-to-metadata latency, skips and CPU per frame.",
        discussion: """
            Latency of frame i = (monotonic time its metadata reached the delegate) − (the frame \
            clock's release time of frame i). The session releases frame i at T0 + pts(i) − pts(0); \
            T0 is estimated as min over frames of (arrival at a native-format video data output − \
            pts), i.e. the earliest any frame reached an output relative to its schedule. That \
            makes the figure a slight underestimate (by one queue hop, microseconds). Frames in \
            which nothing was detected produce no metadata and no latency sample.
            """)

    @Option(help: "The clip.") var input: String
    @Option(help: "Metadata types, comma-separated.") var types = "face,qr"
    @Option(help: "Detectors: real, or none (a no-work stage: the framework's own latency).")
    var stages: StageChoice = .real
    @Option(help: "Face detection at this long side in pixels instead of the default's 640 (what a smaller size buys).")
    var faceSize: Int?

    func run() throws {
        let device = try CaptureDevice(videoFileAtPath: input, pacing: .realTime)
        let metadata: CaptureMetadataOutput
        if let faceSize, stages == .real {
            var configuration = FaceDetector.Configuration.realTime
            configuration.minimumDetectionDimension = faceSize
            configuration.maximumDetectionDimension = faceSize
            metadata = try makeDetectingOutput(parseTypes(types), faceDetection: configuration)
        } else {
            metadata = try makeMetadataOutput(stages, types: parseTypes(types))
        }
        metadata.codeRepeatInterval = 0
        let recorder = MetadataRecorder(keepsArrivals: true)
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "bench.delegate"))
        let video = CaptureVideoDataOutput()
        video.videoPixelFormat = nil
        let releases = ReleaseRecorder()
        video.setSampleBufferDelegate(releases, queue: DispatchQueue(label: "bench.release"))
        let cpu0 = cpuSeconds()
        let seconds = try runToEnd(device: device, outputs: [metadata, video])
        let cpu = cpuSeconds() - cpu0
        let released = releases.arrivals.withLock { $0 }
        let arrivals = recorder.state.withLock { $0.arrivals }
        guard let t0 = released.map({ $0.value - $0.key }).min() else {
            throw BenchError("no frame reached the video data output")
        }
        // Frame p is released at T0 + p (any offset of the first pts is inside T0).
        let latencies = arrivals.map { ($0.value - (t0 + $0.key)) * 1000 }
        let frames = video.deliveredFrameCount + video.droppedFrameCount
        emitJSON([
            "kind": "live", "peer": "cvcam-lib", "input": input, "types": types, "stages": stages.rawValue,
            "face_size": faceSize ?? 640,
            "frames": frames,
            "analysed": metadata.processedFrameCount, "skipped": metadata.skippedFrameCount,
            "video_output_dropped": video.droppedFrameCount, "latency_samples": latencies.count,
            "p50_ms": r(Stats.percentile(latencies, 50), 2), "p95_ms": r(Stats.percentile(latencies, 95), 2),
            "p99_ms": r(Stats.percentile(latencies, 99), 2), "max_ms": r(latencies.max() ?? .nan, 2),
            "seconds": r(seconds), "cpu_ms_per_frame": r(cpu / Double(max(frames, 1)) * 1000, 2),
            "cpu_percent": r(cpu / seconds * 100, 1),
            "faces_ms_per_frame": r(metadata.stageSeconds.faces / Double(max(metadata.processedFrameCount, 1)) * 1000, 2),
            "codes_ms_per_frame": r(metadata.stageSeconds.codes / Double(max(metadata.processedFrameCount, 1)) * 1000, 2),
        ])
    }
}
