@testable import CaptureKit
@testable import CaptureVision
import Dispatch
import Foundation
import Synchronization
import Testing

/// `CaptureClipOutput` end to end on synthetic scenes whose timeline is known. Every scene
/// carries a red marker that moves `markerSpeed` pixels a second along the top edge, so a
/// frame read back from a clip tells the time it was taken: the file, not only the output's
/// report, is checked against the pre-roll and post-roll asked for.
@Suite(.serialized) struct ClipOutputTests {
    static let frameRate = 10.0
    static let frame = 1 / frameRate
    static let markerSpeed = 36.0

    /// 8 s at 10 fps, 320x240: the marker, and `face` (Grace Hopper) in view over `faceSpan`.
    static func scene(faceSpan: ClosedRange<Double>? = nil, seconds: Double = 8) -> SyntheticScene {
        var sprites: [SyntheticScene.Sprite] = [
            .init(content: .color(red: 250, green: 20, blue: 20), size: .init(width: 8, height: 8), origin: CGPoint(x: 0, y: 2),
                  velocity: CGSize(width: markerSpeed, height: 0))
        ]
        if let span = faceSpan {
            sprites.append(
                .init(content: .image(path: Fixtures.faceImage("grace_hopper.jpg")), size: .init(width: 128, height: 150),
                      origin: CGPoint(x: 96, y: 60), appearsAt: span.lowerBound, disappearsAt: span.upperBound))
        }
        return SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: frameRate, frameCount: Int(seconds * frameRate),
            background: .color(red: 110, green: 120, blue: 130), sprites: sprites)
    }

    /// The time a frame of `scene()` was taken, read from where its marker is.
    static func markerTime(_ jpeg: Data, folder: URL) throws -> Double {
        let path = folder.appendingPathComponent("frame-\(UUID().uuidString).jpg").path
        try jpeg.write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let image = try ImageFolderSource.decode(path)
        for x in 0..<image.width {
            let p = image.pixel(x: x, y: 6)  // BGR
            if p[2] > 180 && p[1] < 90 && p[0] < 90 { return Double(x) / markerSpeed }
        }
        throw CaptureError(.decodeFailed, "no marker in the frame")
    }

    /// Every frame of a clip, as the times its markers show.
    static func frameTimes(_ url: URL, folder: URL) throws -> [Double] {
        let reader = try MJPEGAVIReader(path: url.path)
        var times: [Double] = []
        while let jpeg = reader.nextFrame() { times.append(try markerTime(jpeg, folder: folder)) }
        return times
    }

    /// Records the clips and the face events the test compares them with.
    final class Recorder: CaptureClipOutputDelegate, CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
        // @unchecked: everything is behind Mutexes; `trigger` is immutable after init.
        let clips = Mutex<[(CaptureClip, CaptureError?)]>([])
        let started = Mutex<[URL]>([])
        let faceEvents = Mutex<[MetadataEvent]>([])
        var trigger: ClipMetadataTrigger?

        func clipOutput(_ output: CaptureClipOutput, didStartClipTo url: URL, triggeredAt time: MediaTime) {
            started.withLock { $0.append(url) }
        }
        func clipOutput(_ output: CaptureClipOutput, didFinishClip clip: CaptureClip, error: CaptureError?) {
            clips.withLock { $0.append((clip, error)) }
        }
        func metadataOutput(
            _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
        ) {}
        func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
            faceEvents.withLock { $0 += events.filter { if case .faceEntered = $0 { true } else if case .faceLeft = $0 { true } else { false } } }
            trigger?.handle(events)
        }
    }

    /// Runs `scene` through a session with the real face stage and a clip output configured by
    /// `configure`, triggered by faces; returns the clips and the face events.
    func runWithFaces(_ scene: SyntheticScene, folder: URL, configure: (CaptureClipOutput) -> Void)
        throws -> (clips: [(CaptureClip, CaptureError?)], events: [MetadataEvent], output: CaptureClipOutput)
    {
        let clip = CaptureClipOutput(folder: folder)
        clip.namePrefix = "door"
        configure(clip)
        let recorder = Recorder()
        recorder.trigger = ClipMetadataTrigger(clipOutput: clip)
        clip.setDelegate(recorder, queue: nil)
        let metadata = CaptureMetadataOutput(faceStage: DefaultFaceStage(detector: try FaceDetector()), codeStage: nil)
        try metadata.setMetadataObjectTypes([.face])
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "test.metadata"))
        let device = try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)
        let session = try PhotoTestSupport.runningSession(device, outputs: [clip, metadata])
        #expect(session.waitUntilStopped(timeout: 120))
        metadata.waitUntilIdle()
        clip.waitUntilIdle()
        return (recorder.clips.withLock { $0 }, recorder.faceEvents.withLock { $0 }, clip)
    }

    @Test func aFaceGivesOneClipFromPreRollBeforeItEnteredToPostRollAfterItLeft() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (clips, events, output) = try runWithFaces(Self.scene(faceSpan: 2.0...4.0), folder: folder) {
            $0.preRoll = MediaTime(seconds: 1)
            $0.postRoll = MediaTime(seconds: 1.5)
        }
        // The face as the tracker reported it: entered near 2.0 s (after its live hold), last seen near 3.9 s.
        guard case .faceEntered(let entered)? = events.first, case .faceLeft(let left)? = events.last, events.count == 2 else {
            Issue.record("expected one enter and one leave, got \(events.map(\.name))")
            return
        }
        #expect(abs(entered.time.seconds - 2.0) <= 0.35 && abs(left.time.seconds - 3.9) <= 0.35)
        #expect(clips.count == 1)
        let (clip, error) = try #require(clips.first)
        #expect(error == nil && clip.ending == .postRollElapsed)
        #expect(clip.faceIDs == [entered.faceID])
        #expect(clip.url.lastPathComponent.hasPrefix("door-") && clip.url.lastPathComponent.hasSuffix("-clip.avi"))
        #expect(output.clipCount == 1 && output.droppedFrameCount == 0)
        // First and last frames within a frame of what was asked: the trigger minus the
        // pre-roll, the last sight plus the post-roll.
        let askedStart = entered.time.seconds - 1, askedEnd = left.time.seconds + 1.5
        #expect(abs(clip.firstFrameTime.seconds - askedStart) <= Self.frame + 1e-6, "first \(clip.firstFrameTime.seconds) asked \(askedStart)")
        #expect(abs(clip.lastFrameTime.seconds - askedEnd) <= Self.frame + 1e-6, "last \(clip.lastFrameTime.seconds) asked \(askedEnd)")
        // The file says the same: every frame in order, its first and last taken at those times.
        let times = try Self.frameTimes(clip.url, folder: folder)
        #expect(times.count == clip.frameCount)
        #expect(abs((times.first ?? -9) - askedStart) <= Self.frame + 0.03, "file's first frame at \(times.first ?? -9)")
        #expect(abs((times.last ?? -9) - askedEnd) <= Self.frame + 0.03, "file's last frame at \(times.last ?? -9)")
        #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - Self.frame) < 0.06 }, "frames missing or repeated: \(times)")
        // OpenCV's FFmpeg reader, independent of both, plays the same number of frames.
        #expect(try PhotoTestSupport.countFrames(clip.url).count == clip.frameCount)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [clip.url.lastPathComponent])
    }

    @Test func aLongVisitIsCutAtMaxClipIntoClipsThatFollowOnWithoutAGapOrARepeat() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-long")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (clips, events, _) = try runWithFaces(Self.scene(faceSpan: 1.0...6.0), folder: folder) {
            $0.preRoll = MediaTime(seconds: 0.5)
            $0.postRoll = MediaTime(seconds: 0.5)
            $0.maxClipDuration = MediaTime(seconds: 1.5)
        }
        #expect(events.count == 2)
        #expect(clips.count >= 3)
        #expect(clips.allSatisfy { $0.1 == nil })
        #expect(clips.dropLast().allSatisfy { $0.0.ending == .maximumDurationReached })
        #expect(clips.last?.0.ending == .postRollElapsed)
        #expect(clips.first?.0.continuesPreviousClip == false && clips.dropFirst().allSatisfy(\.0.continuesPreviousClip))
        var previousLast: Double?
        // A continuation whose every frame was past the leave (the event came late) is empty and gone.
        for (clip, _) in clips where clip.frameCount == 0 { #expect(!FileManager.default.fileExists(atPath: clip.url.path)) }
        for (clip, _) in clips where clip.frameCount > 0 {
            let times = try Self.frameTimes(clip.url, folder: folder)
            #expect(times.count == clip.frameCount)
            #expect((times.last ?? 0) - (times.first ?? 0) <= 1.5 + 0.06, "clip longer than maxClip: \(times)")
            if let previousLast { #expect(abs((times.first ?? -9) - previousLast - Self.frame) < 0.06, "a gap or repeat between clips") }
            previousLast = times.last
        }
        #expect(Set(clips.map(\.0.url)).count == clips.count)
    }

    /// Triggers at exact frame times from a video output's delegate: the clip's bounds are the
    /// frames nearest the times asked, whatever the detector.
    final class ScriptedTrigger: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // @unchecked: `clip` is set before the session starts.
        let clip: CaptureClipOutput
        let script: [(time: Double, enter: Bool, subject: ClipSubject)]
        init(clip: CaptureClipOutput, script: [(Double, Bool, ClipSubject)]) {
            self.clip = clip
            self.script = script.map { (time: $0.0, enter: $0.1, subject: $0.2) }
        }
        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            let t = sampleBuffer.presentationTimeStamp
            for step in script where abs(step.time - t.seconds) < 1e-6 {
                if step.enter { clip.subjectEntered(step.subject, at: t) } else { clip.subjectLeft(step.subject, at: t) }
            }
        }
    }

    func runScripted(_ script: [(Double, Bool, ClipSubject)], folder: URL, calls: (any FileSystemCalls)? = nil,
                     configure: (CaptureClipOutput) -> Void) throws -> [(CaptureClip, CaptureError?)] {
        let clip = calls.map { CaptureClipOutput(folder: folder, fileCalls: $0) } ?? CaptureClipOutput(folder: folder)
        configure(clip)
        let recorder = Recorder()
        clip.setDelegate(recorder, queue: nil)
        let video = CaptureVideoDataOutput()
        video.alwaysDiscardsLateVideoFrames = false
        video.setSampleBufferDelegate(ScriptedTrigger(clip: clip, script: script), queue: DispatchQueue(label: "test.video"))
        let device = try CaptureDevice(syntheticScene: Self.scene(), pacing: .asFastAsPossible)
        let session = try PhotoTestSupport.runningSession(device, outputs: [clip, video])
        #expect(session.waitUntilStopped(timeout: 60))
        clip.waitUntilIdle()
        return recorder.clips.withLock { $0 }
    }

    @Test func twoSubjectsOverlappingMakeOneClipThatEndsPostRollAfterTheLastLeft() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-scripted")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clips = try runScripted(
            [(2.0, true, .face(1)), (2.5, true, .other("doorbell")), (3.0, false, .face(1)), (4.0, false, .other("doorbell"))],
            folder: folder
        ) {
            $0.preRoll = MediaTime(seconds: 0.8)
            $0.postRoll = MediaTime(seconds: 0.6)
        }
        #expect(clips.count == 1)
        let (clip, _) = try #require(clips.first)
        #expect(clip.subjects == [.face(1), .other("doorbell")])
        #expect(abs(clip.firstFrameTime.seconds - 1.2) < 1e-6 && abs(clip.lastFrameTime.seconds - 4.6) < 1e-6)
        let times = try Self.frameTimes(clip.url, folder: folder)
        #expect(times.count == 35)
        #expect(abs((times.first ?? 0) - 1.2) < 0.06 && abs((times.last ?? 0) - 4.6) < 0.06)
    }

    @Test func aSubjectBackWithinThePostRollExtendsTheClip() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-back")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clips = try runScripted(
            [(1.0, true, .face(1)), (2.0, false, .face(1)), (2.5, true, .face(2)), (3.0, false, .face(2)),
             (6.0, true, .face(3)), (6.5, false, .face(3))],
            folder: folder
        ) {
            $0.preRoll = MediaTime(seconds: 0.5)
            $0.postRoll = MediaTime(seconds: 1)
        }
        // Face 2 came back 0.5 s after face 1 left (within the post-roll): one clip. Face 3
        // came long after: a second clip, its pre-roll not reaching into the first.
        #expect(clips.map(\.0.faceIDs) == [[1, 2], [3]])
        #expect(abs(clips[0].0.firstFrameTime.seconds - 0.5) < 1e-6 && abs(clips[0].0.lastFrameTime.seconds - 4.0) < 1e-6)
        #expect(abs(clips[1].0.firstFrameTime.seconds - 5.5) < 1e-6 && abs(clips[1].0.lastFrameTime.seconds - 7.5) < 1e-6)
        #expect(clips.allSatisfy { $0.0.ending == .postRollElapsed })
    }

    @Test func aPostRollThatRunsPastTheCutGoesOnInTheNextClip() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-cut-postroll")
        defer { try? FileManager.default.removeItem(at: folder) }
        // A glimpse at 2.0 s: 1.5 … 4.0 s asked, cut at 1.5 s of clip. The leave comes before the
        // cut (the frames the clip output has seen are behind the trigger's): the post-roll left
        // after the cut must still be written, as it is when the leave comes after it.
        let clips = try runScripted([(2.0, true, .face(1)), (2.0, false, .face(1))], folder: folder) {
            $0.preRoll = MediaTime(seconds: 0.5)
            $0.postRoll = MediaTime(seconds: 2)
            $0.maxClipDuration = MediaTime(seconds: 1.5)
        }
        #expect(clips.count == 2, "\(clips.map(\.0))")
        guard clips.count == 2 else { return }
        #expect(clips.allSatisfy { $0.1 == nil } && clips.map(\.0.faceIDs) == [[1], [1]])
        #expect(clips.map(\.0.ending) == [.maximumDurationReached, .postRollElapsed])
        #expect(clips.map(\.0.continuesPreviousClip) == [false, true])
        #expect(abs(clips[0].0.firstFrameTime.seconds - 1.5) < 1e-6 && abs(clips[0].0.lastFrameTime.seconds - 3.0) < 1e-6)
        #expect(abs(clips[1].0.firstFrameTime.seconds - 3.1) < 1e-6 && abs(clips[1].0.lastFrameTime.seconds - 4.0) < 1e-6)
        let times = try Self.frameTimes(clips[1].0.url, folder: folder)
        #expect(times.count == 10 && abs((times.first ?? -9) - 3.1) <= 0.03 && abs((times.last ?? -9) - 4.0) <= 0.03, "\(times)")
    }

    @Test func theSessionStoppingEndsTheClipWithEveryFrameUpToIt() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-stop")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clips = try runScripted([(7.0, true, .face(1))], folder: folder) { $0.preRoll = MediaTime(seconds: 2) }
        #expect(clips.count == 1)
        let (clip, error) = try #require(clips.first)
        #expect(error == nil && clip.ending == .sessionStopped)
        #expect(abs(clip.firstFrameTime.seconds - 5.0) < 1e-6 && abs(clip.lastFrameTime.seconds - 7.9) < 1e-6)
        #expect(try PhotoTestSupport.countFrames(clip.url).count == 30)
    }

    @Test func aFullDiskEndsTheClipWithAFileThatPlaysToItsLastFragment() throws {
        let folder = try PhotoTestSupport.temporaryFolder("clips-full")
        defer { try? FileManager.default.removeItem(at: folder) }
        let calls = FailingFileCalls()
        calls.failWritesAfter = 60_000
        let clips = try runScripted([(1.0, true, .face(1)), (7.0, false, .face(1))], folder: folder, calls: calls) {
            $0.preRoll = MediaTime(seconds: 0.5)
            $0.movieFragmentInterval = MediaTime(seconds: 0.2)
        }
        let (clip, error) = try #require(clips.first)
        #expect(clip.ending == .writeFailed && error?.code == .writeFailed && error?.errno == ENOSPC)
        let reader = try MJPEGAVIReader(path: clip.url.path)
        var frames = 0
        while reader.nextFrame() != nil { frames += 1 }
        #expect(frames >= 2 && frames == clip.frameCount)
        #expect(try PhotoTestSupport.countFrames(clip.url).count >= reader.declaredFrameCount)
    }

    @Test func aFrameWrittenPastTheEndIsTakenBackOutOfTheFile() throws {
        // The leave arrives two seconds after its frame (a slow detector): the frames the clip
        // wrote meanwhile, past leave + post-roll, are cut from the file.
        let folder = try PhotoTestSupport.temporaryFolder("clips-late")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clip = CaptureClipOutput(folder: folder)
        clip.preRoll = .zero
        clip.postRoll = MediaTime(seconds: 0.5)
        let recorder = Recorder()
        clip.setDelegate(recorder, queue: nil)
        final class Late: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
            let clip: CaptureClipOutput
            init(clip: CaptureClipOutput) { self.clip = clip }
            func captureOutput(_ output: CaptureOutput, didOutput s: SampleBuffer, from connection: CaptureConnection) {
                let t = s.presentationTimeStamp.seconds
                if abs(t - 1.0) < 1e-6 { clip.subjectEntered(.face(9), at: s.presentationTimeStamp) }
                if abs(t - 4.0) < 1e-6 {
                    clip.waitUntilIdle()  // frames up to 4.0 s are in the file
                    clip.subjectLeft(.face(9), at: MediaTime(seconds: 2.0))
                }
            }
        }
        let video = CaptureVideoDataOutput()
        video.alwaysDiscardsLateVideoFrames = false
        video.setSampleBufferDelegate(Late(clip: clip), queue: DispatchQueue(label: "test.late"))
        let device = try CaptureDevice(syntheticScene: Self.scene(), pacing: .asFastAsPossible)
        let session = try PhotoTestSupport.runningSession(device, outputs: [clip, video])
        #expect(session.waitUntilStopped(timeout: 60))
        clip.waitUntilIdle()
        let clips = recorder.clips.withLock { $0 }
        #expect(clips.count == 1)
        let made = try #require(clips.first).0
        #expect(abs(made.lastFrameTime.seconds - 2.5) < 1e-6)
        let times = try Self.frameTimes(made.url, folder: folder)
        #expect(times.count == 16 && abs((times.last ?? 0) - 2.5) < 0.06)
        #expect(try PhotoTestSupport.countFrames(made.url).count == 16)
    }
}
