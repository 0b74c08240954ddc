import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureKit

/// `stopRunning()` returns only when nothing of the session is still working on a frame: the
/// detection lanes, the movie writer, the network stream's reading thread. AVFoundation code does
/// `stopRunning(); exit(0)`, and a thread still inside OpenCV while `exit` runs the libraries'
/// destructors crashes the process (issue #30, item 10; issue #32, row 20).
@Suite struct StopQuiescenceTests {
    /// A face stage that is always busy (each frame takes 150 ms) and says when it is inside a frame.
    final class BusyFaceStage: FaceMetadataStage, Sendable {
        let inside = Atomic<Int>(0)
        let calls = Atomic<Int>(0)
        var isAvailable: Bool { true }
        func process(_ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double)
            throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent])
        {
            inside.add(1, ordering: .sequentiallyConsistent)
            calls.add(1, ordering: .sequentiallyConsistent)
            Thread.sleep(forTimeInterval: 0.15)
            inside.subtract(1, ordering: .sequentiallyConsistent)
            return ([], [])
        }
        func finish() -> [MetadataEvent] { [] }
    }

    final class MovieEnd: CaptureFileOutputRecordingDelegate, Sendable {
        func fileOutput(
            _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
            error: (any Error)?
        ) {}
    }

    @Test func noDetectionOrMovieWorkIsInProgressOnceStopRunningReturns() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stop-quiet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for round in 0..<5 {
            let session = CaptureSession()
            try session.addInput(try CaptureDeviceInput(device: CaptureDevice(syntheticScene: movingScene(fps: 30, frames: nil))))
            let stage = BusyFaceStage()
            let metadata = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
            try metadata.setMetadataObjectTypes([.face])
            metadata.setMetadataObjectsDelegate(MetadataRecorder(), queue: DispatchQueue(label: "test.metadata"))
            try session.addOutput(metadata)
            let movie = CaptureMovieFileOutput()
            try session.addOutput(movie)
            try movie.startRecording(to: folder.appendingPathComponent("round\(round).avi"), recordingDelegate: MovieEnd())
            try session.startRunning()
            let deadline = Date(timeIntervalSinceNow: 30)
            while stage.calls.load(ordering: .sequentiallyConsistent) < 3 && Date() < deadline { usleep(10_000) }
            #expect(stage.calls.load(ordering: .sequentiallyConsistent) >= 3)
            try session.stopRunning()
            // Right after the return: no lane inside a frame, the movie's file finished.
            #expect(stage.inside.load(ordering: .sequentiallyConsistent) == 0, "round \(round)")
            #expect(!movie.isRecording, "round \(round)")
            let calls = stage.calls.load(ordering: .sequentiallyConsistent)
            usleep(300_000)
            #expect(stage.calls.load(ordering: .sequentiallyConsistent) == calls, "no frame starts after the stop")
        }
    }

    /// What the scripted connections of one test did.
    final class Counts: Sendable {
        let inside = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
        let opened = Atomic<Int>(0)
        var readsInProgress: Int { inside.load(ordering: .sequentiallyConsistent) }
        var closes: Int { closed.load(ordering: .sequentiallyConsistent) }
        var opens: Int { opened.load(ordering: .sequentiallyConsistent) }
    }

    /// A network camera whose every read takes `readTime` (100 ms: a decode, so the stream thread
    /// is inside a read most of the time, and must be finished and gone when the session has
    /// stopped).
    final class SlowConnection: NetworkStreamConnection {
        let info: NetworkStreamInfo
        let counts: Counts
        let readTime: Double
        private let pool: PixelBufferPool
        init(info: NetworkStreamInfo, counts: Counts, readTime: Double = 0.1) {
            self.info = info
            self.counts = counts
            self.readTime = readTime
            counts.opened.add(1, ordering: .sequentiallyConsistent)
            pool = PixelBufferPool(width: info.dimensions.width, height: info.dimensions.height, pixelFormat: .bgr)
        }
        func readFrame() throws(CaptureError) -> NetworkStreamFrame? {
            counts.inside.add(1, ordering: .sequentiallyConsistent)
            defer { counts.inside.subtract(1, ordering: .sequentiallyConsistent) }
            Thread.sleep(forTimeInterval: readTime)
            return NetworkStreamFrame(pixelBuffer: try pool.makeBuffer())
        }
        func close() { counts.closed.add(1, ordering: .sequentiallyConsistent) }
    }

    @Test func theStreamThreadIsJoinedWhenTheSessionStops() throws {
        let info = NetworkStreamInfo(dimensions: .init(width: 64, height: 48), reportedFramesPerSecond: 10, codec: "MJPG")
        let counts = Counts()
        let opener: NetworkStreamOpener = { _, _ throws(CaptureError) in SlowConnection(info: info, counts: counts) }
        for round in 0..<5 {
            let source = try NetworkStreamSource(url: try NetworkStreamURL("rtsp://cam/live"), opener: opener)
            let device = try CaptureDevice(
                uniqueID: "stream:test\(round)", localizedName: "scripted stream", deviceType: .external, source: source)
            let recorder = FrameRecorder(keepsFrames: false)
            let (session, _) = try makeSession(device: device, recorder: recorder)
            try session.startRunning()
            _ = recorder.wait(for: 3, timeout: 30)
            try session.stopRunning()
            #expect(counts.readsInProgress == 0, "round \(round): a read still running")
            #expect(counts.closes == counts.opens, "round \(round)")
        }
    }

    /// A source that notes the thread it is opened on (the input's capture thread).
    final class ThreadNotingSource: FrameSource {
        let inner: any FrameSource
        let threads: ThreadNotes
        init(_ inner: any FrameSource, threads: ThreadNotes) {
            self.inner = inner
            self.threads = threads
        }
        var formats: [CaptureDevice.Format] { inner.formats }
        var isLive: Bool { inner.isLive }
        var pacing: FramePacing { inner.pacing }
        func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
            threads.noteCurrent()
            try inner.open(format: format, frameDuration: frameDuration)
        }
        func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
            try inner.nextFrame(isCancelled: isCancelled)
        }
        func close() { inner.close() }
    }

    /// A face stage that notes the thread each frame is analysed on (a detection lane).
    final class ThreadNotingFaceStage: FaceMetadataStage, Sendable {
        let threads: ThreadNotes
        let calls = Atomic<Int>(0)
        init(threads: ThreadNotes) { self.threads = threads }
        var isAvailable: Bool { true }
        func process(_ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double)
            throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent])
        {
            threads.noteCurrent()
            calls.add(1, ordering: .sequentiallyConsistent)
            return ([], [])
        }
        func finish() -> [MetadataEvent] { [] }
    }

    /// AVFoundation code may call `stopRunning()` and then `exit(0)`: every thread the session
    /// started (the capture thread, the network stream's thread, the detection lanes) must have
    /// exited, not merely finished its work, when `stopRunning()` returns (the port check saw a
    /// capture thread still listed; the kernel lists a thread until it is joined or gone).
    @Test func everyThreadTheSessionStartedHasExitedOnceStopRunningReturns() throws {
        let info = NetworkStreamInfo(dimensions: .init(width: 64, height: 48), reportedFramesPerSecond: 30, codec: "MJPG")
        let counts = Counts()
        let streamThreads = ThreadNotes(lingers: true)
        let opener: NetworkStreamOpener = { _, _ throws(CaptureError) in
            streamThreads.noteCurrent()
            return SlowConnection(info: info, counts: counts, readTime: 0.005)
        }
        for round in 0..<5 {
            let captureThreads = ThreadNotes(lingers: true)
            // The lanes are joined after the capture thread: their exits would hide its.
            let laneThreads = ThreadNotes(lingers: false)
            let stream = try NetworkStreamSource(url: try NetworkStreamURL("rtsp://cam/live"), opener: opener)
            let device = try CaptureDevice(
                uniqueID: "stream:threads\(round)", localizedName: "scripted stream", deviceType: .external,
                source: ThreadNotingSource(stream, threads: captureThreads))
            let session = CaptureSession()
            try session.addInput(try CaptureDeviceInput(device: device))
            let stage = ThreadNotingFaceStage(threads: laneThreads)
            let metadata = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
            try metadata.setMetadataObjectTypes([.face])
            metadata.setMetadataObjectsDelegate(MetadataRecorder(), queue: DispatchQueue(label: "test.metadata"))
            try session.addOutput(metadata)
            try session.startRunning()
            let deadline = Date(timeIntervalSinceNow: 30)
            while stage.calls.load(ordering: .sequentiallyConsistent) < 2 && Date() < deadline { usleep(2_000) }
            try session.stopRunning()
            // Straight after the return, with no wait.
            let alive = (capture: captureThreads.alive, lanes: laneThreads.alive, stream: streamThreads.alive)
            #expect(captureThreads.all.count == 1 && !laneThreads.all.isEmpty, "round \(round): threads noted")
            #expect(alive.capture.isEmpty, "round \(round): the capture thread \(alive.capture) is still listed")
            #expect(alive.lanes.isEmpty, "round \(round): detection threads \(alive.lanes) still listed")
            #expect(alive.stream.isEmpty, "round \(round): the stream's thread \(alive.stream) is still listed")
            withExtendedLifetime(stream) {}
        }
    }

    /// The last line for exit paths that never close the source: every live stream thread is
    /// stopped and joined (what the `atexit` handler does).
    @Test func liveStreamThreadsCanAllBeStoppedAndJoined() throws {
        let info = NetworkStreamInfo(dimensions: .init(width: 64, height: 48), reportedFramesPerSecond: 10, codec: "MJPG")
        let counts = Counts()
        let opener: NetworkStreamOpener = { _, _ throws(CaptureError) in SlowConnection(info: info, counts: counts) }
        // Opened and never closed nor released before the "exit".
        let sources = try (0..<3).map { _ in try NetworkStreamSource(url: try NetworkStreamURL("rtsp://exit-test/live"), opener: opener) }
        // Only this test's threads: the suites running beside it have streams of their own.
        LiveStreamThreads.shared.stopAndJoinAll { $0.redactedURL == "rtsp://exit-test/live" }
        #expect(counts.readsInProgress == 0)
        #expect(counts.closes == 3)
        withExtendedLifetime(sources) {}
    }
}
